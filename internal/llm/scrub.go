package llm

import "github.com/reactgen/reactgen/internal/redact"

// The one place where what a server sent back loses the run's secrets (the API key, the
// configured header values, the base URL's user information), online and in batch mode
// alike: a proxy or a server may echo the Authorization header, or any other, in a
// completion, an error message or a batch output or error line, and whatever leaves the
// client reaches the response cache, the episode log, kept and rejected episodes, the
// manifest and the terminal. OpenAI.Complete scrubs every reply and error it returns; the
// Batcher scrubs every line result as soon as it is read from a batch's files (scrubLine).

func scrubSecrets(s string, secrets []string) string { return redact.Scrub(s, secrets) }

// longSecrets are the secrets of minSecret bytes or more: a short key ("EMPTY", "k")
// would garble the completion text it is cut from.
func longSecrets(secrets []string) []string {
	var long []string
	for _, s := range secrets {
		if len(s) >= minSecret {
			long = append(long, s)
		}
	}
	return long
}

// scrubResponse removes the long secrets from every text of resp, in place.
func scrubResponse(resp *Response, secrets []string) {
	long := longSecrets(secrets)
	if len(long) == 0 {
		return
	}
	scrub := func(s string) string { return scrubSecrets(s, long) }
	resp.Model = scrub(resp.Model)
	for i := range resp.Choices {
		c := &resp.Choices[i]
		c.Text, c.Reasoning = scrub(c.Text), scrub(c.Reasoning)
		for j := range c.ToolCalls {
			f := &c.ToolCalls[j].Function
			f.Name, f.Arguments = scrub(f.Name), scrub(f.Arguments)
		}
	}
}

// scrubError returns err with the secrets removed from its text. An *APIError is copied
// with its message, body, type and code scrubbed, so that errors.As finds a clean one;
// any other error keeps its chain behind a scrubbed text (see redact).
func scrubError(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	if ae, ok := err.(*APIError); ok {
		cp := *ae
		cp.Message, cp.Body = scrubSecrets(cp.Message, secrets), scrubSecrets(cp.Body, secrets)
		cp.Type, cp.Code = scrubSecrets(cp.Type, secrets), scrubSecrets(cp.Code, secrets)
		return &cp
	}
	return redactErr(err, secrets...)
}

// scrubLine is a batch line's result with the secrets removed from its response (a copy:
// the result may be shared by several callers) and its error.
func scrubLine(r lineResult, secrets []string) lineResult {
	if len(secrets) == 0 {
		return r
	}
	if r.err != nil {
		return lineResult{err: scrubError(r.err, secrets)}
	}
	resp := r.resp
	resp.Choices = make([]Choice, len(r.resp.Choices))
	for i, c := range r.resp.Choices {
		c.ToolCalls = append([]ToolCall(nil), c.ToolCalls...)
		resp.Choices[i] = c
	}
	scrubResponse(&resp, secrets)
	return lineResult{resp: resp}
}
