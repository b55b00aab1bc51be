package benchmeter

import "testing"

func TestSize(t *testing.T) {
	t.Setenv("BENCHMETER_TEST_SIZE", "")
	if got := Size(t, "BENCHMETER_TEST_SIZE", 7); got != 7 {
		t.Errorf("unset: got %d, want the default 7", got)
	}
	t.Setenv("BENCHMETER_TEST_SIZE", "300")
	if got := Size(t, "BENCHMETER_TEST_SIZE", 7); got != 300 {
		t.Errorf("300: got %d", got)
	}
}
