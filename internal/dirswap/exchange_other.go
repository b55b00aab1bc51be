//go:build !linux

package dirswap

// exchange reports that this system has no atomic directory exchange.
func exchange(a, b string) error { return errNoExchange }
