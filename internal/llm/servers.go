package llm

import "github.com/reactgen/reactgen/internal/llm/openaiclient"

// Base URLs of the servers reactgen is used with, each at its usual local port. Every one
// speaks OpenAI's wire format under /v1; they differ in the endpoints they serve (see
// docs/servers.md):
//
//   - OpenAI: chat for current models; the legacy completions endpoint only for
//     gpt-3.5-turbo-instruct and davinci-002/babbage-002 (go-openai refuses chat models
//     there before sending anything).
//   - vLLM (vllm serve): chat and completions.
//   - llama.cpp (llama-server): chat and completions.
//   - Ollama: chat and completions; no n > 1.
//   - TGI (text-generation-inference): chat through its Messages API (1.4 and later),
//     which needs a model with a chat template; recent releases also serve completions.
const (
	BaseURLOpenAI   = openaiclient.DefaultBaseURL
	BaseURLVLLM     = "http://localhost:8000/v1"
	BaseURLLlamaCpp = "http://localhost:8080/v1"
	BaseURLOllama   = "http://localhost:11434/v1"
	BaseURLTGI      = "http://localhost:8080/v1"
)
