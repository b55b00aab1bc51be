package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pass@host/v1":                    "https://user:[redacted]@host/v1",
		"https://token@host":                           "https://[redacted]@host",
		"http://127.0.0.1:8000/v1":                     "http://127.0.0.1:8000/v1",
		`Get "https://u:p@h/x?a=b": dial tcp: refused`: `Get "https://u:[redacted]@h/x?a=b": dial tcp: refused`,
		"mail me at a@b.c":                             "mail me at a@b.c",
		"https://host/path?email=a@b.c":                "https://host/path?email=a@b.c",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
