package finetune_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/internal/origin"
	"github.com/reactgen/reactgen/internal/origin/origintest"
)

// The fine-tuning client refuses a redirect to another host: the key, the headers and
// the training file never reach it, and the refusal is not retried as a transient error.
func TestFineTuningClientRefusesARedirectToAnotherHost(t *testing.T) {
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		p := origintest.New(t, status)
		api, err := finetune.NewAPI(finetune.APIOptions{BaseURL: p.From.URL + "/v1", APIKey: "sk-ft-canary-0123456789",
			Headers: map[string]string{"X-Api-Key": "gw-ft-canary-0123456789"}, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = api.Upload(t.Context(), "train.jsonl", []byte(`{"messages":[]}`+"\n"), time.Millisecond)
		if !errors.Is(err, origin.ErrRedirect) {
			t.Fatalf("upload after a %d: %v, want ErrRedirect", status, err)
		}
		var ae *finetune.APIError
		if !errors.As(err, &ae) || ae.Transient() {
			t.Errorf("upload after a %d: %v is transient or not an APIError", status, err)
		}
		if _, err := api.Get(t.Context(), "ftjob-1"); !errors.Is(err, origin.ErrRedirect) {
			t.Errorf("get job after a %d: %v, want ErrRedirect", status, err)
		}
		if got := p.Received(); len(got) != 0 {
			t.Errorf("after a %d the other host received %d requests: %+v", status, len(got), got[0])
		}
	}
}
