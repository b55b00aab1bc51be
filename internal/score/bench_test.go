package score

import "testing"

func BenchmarkF1(b *testing.B) {
	for b.Loop() {
		F1("The President of the United States of America", "president of the united states")
	}
}
