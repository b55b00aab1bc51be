package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/pipeline"
)

// errProbe is what the probe's HTTP doer answers: go-openai got as far as sending.
var errProbe = errors.New("probe: not sent")

type probeDoer struct{}

func (probeDoer) Do(*http.Request) (*http.Response, error) { return nil, errProbe }

// EndpointRefuses reports whether go-openai, which sends every request, refuses model on
// the endpoint generate.format uses (completion: /completions; chat and tools:
// /chat/completions) before anything leaves the process. It asks go-openai itself,
// through a client whose HTTP doer sends nothing, so the answer is the library's own
// list of exact names (chat models such as gpt-4o-mini on /completions, the legacy
// text-davinci-003 family on /chat/completions), whatever server base_url names: a
// local server (vLLM) serving a model under one of those names is refused as well, and
// any other name is allowed on both endpoints.
func EndpointRefuses(format, model string) bool {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = "http://127.0.0.1:0/v1" // never dialled: the doer answers first
	cfg.HTTPClient = probeDoer{}
	c := openai.NewClientWithConfig(cfg)
	var err error
	if format == "completion" {
		_, err = c.CreateCompletion(context.Background(), openai.CompletionRequest{Model: model, Prompt: ""})
	} else {
		_, err = c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: model})
	}
	return errors.Is(err, openai.ErrCompletionUnsupportedModel) || errors.Is(err, openai.ErrChatCompletionInvalidModel)
}

// CheckEndpoint fails with a *pipeline.ConfigError naming generate.format when go-openai
// would refuse llm.model, or an endpoint's model, on the endpoint the format uses (see
// EndpointRefuses): such a run would send nothing and fail every request.
func CheckEndpoint(format string, cfg pipeline.LLMConfig) error {
	type named struct{ key, model string }
	models := []named{{"llm.model", cfg.Model}}
	for i, e := range cfg.ResolvedEndpoints() {
		if e.Model != cfg.Model {
			models = append(models, named{fmt.Sprintf("llm.endpoints[%d].model", i), e.Model})
		}
	}
	for _, m := range models {
		if !EndpointRefuses(format, m.model) {
			continue
		}
		if format == "completion" {
			return &pipeline.ConfigError{Key: "generate.format", Message: fmt.Sprintf(
				"completion uses the legacy /completions endpoint, where go-openai refuses the chat model %s (%s) "+
					"before any request is sent: set generate.format chat (or tools), or name a completion model "+
					"(gpt-3.5-turbo-instruct, davinci-002, or a local server's model under a name of its own)", m.model, m.key)}
		}
		return &pipeline.ConfigError{Key: "generate.format", Message: fmt.Sprintf(
			"%s uses /chat/completions, where go-openai refuses the legacy completion model %s (%s) "+
				"before any request is sent: set generate.format completion, or name a chat model", format, m.model, m.key)}
	}
	return nil
}
