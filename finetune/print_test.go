package finetune_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/finetune"
)

// A fine-tuning client printed with any verb (a log line, an error wrapping it) names
// its endpoint and never its key.
func TestAPIPrintsWithoutKey(t *testing.T) {
	const key = "sk-ft-canary-print-0123456789"
	api, err := finetune.NewAPI(finetune.APIOptions{BaseURL: "http://127.0.0.1:1/v1", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		got := fmt.Sprintf(verb, api)
		if strings.Contains(got, key) || strings.Contains(got, fmt.Sprintf("%x", key)) {
			t.Errorf("%s printed the key: %s", verb, got)
		}
		if want := "finetune.API{http://127.0.0.1:1/v1}"; got != want {
			t.Errorf("%s printed %q, want %q", verb, got, want)
		}
	}
}
