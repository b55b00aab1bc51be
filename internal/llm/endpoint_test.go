package llm

import (
	"errors"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// TestCheckEndpoint: a model go-openai refuses on the format's endpoint is a config error
// naming generate.format and the model's key; any other name passes (a local server may
// serve anything), and so does the same name on the endpoint that serves it.
func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		name, format, model string
		endpoints           []pipeline.EndpointConfig
		wantKey             string // "" = no error
	}{
		{"chat model, completion format", "completion", "gpt-4o-mini", nil, "llm.model"},
		{"dated chat model, completion format", "completion", "gpt-4o-mini-2024-07-18", nil, "llm.model"},
		{"chat model, chat format", "chat", "gpt-4o-mini", nil, ""},
		{"chat model, tools format", "tools", "gpt-4o", nil, ""},
		{"completion model, completion format", "completion", "gpt-3.5-turbo-instruct", nil, ""},
		{"legacy completion model, chat format", "chat", "text-davinci-003", nil, "llm.model"},
		{"a local server's name, completion format", "completion", "meta-llama/Llama-3.1-8B-Instruct", nil, ""},
		{"a fine-tuned chat model, completion format", "completion", "ft:gpt-4o-mini-2024-07-18:org::abc", nil, ""},
		{"an endpoint's own chat model", "completion", "Qwen/Qwen2.5-7B",
			[]pipeline.EndpointConfig{{BaseURL: "http://127.0.0.1:8000/v1"}, {BaseURL: "https://api.openai.com/v1", Model: "gpt-4o"}}, "llm.endpoints[1].model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckEndpoint(tt.format, pipeline.LLMConfig{Model: tt.model, Endpoints: tt.endpoints})
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			var ce *pipeline.ConfigError
			if !errors.As(err, &ce) || ce.Key != "generate.format" || !strings.Contains(err.Error(), tt.wantKey) {
				t.Fatalf("got %v, want a config error on generate.format naming %s", err, tt.wantKey)
			}
		})
	}
}
