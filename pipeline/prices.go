package pipeline

import (
	"fmt"
	"strings"
)

// PricesAsOf dates DefaultPrices: the providers' published prices on that day.
const PricesAsOf = "2025-09-30"

// DefaultPrices prices well-known models in USD per 1M tokens, as their providers
// published them on PricesAsOf (openai.com/api/pricing, api-docs.deepseek.com's pricing
// page). llm.prices overrides them model by model; LookupPrice reads llm.prices first.
// A key prices every model whose name it begins (the longest such key wins), so
// "gpt-4o-mini" prices "gpt-4o-mini-2024-07-18", and "ft:gpt-4o-mini" prices every
// model fine-tuned from it at OpenAI's fine-tuned inference price.
var DefaultPrices = map[string]Price{
	"gpt-5":                  {Prompt: 1.25, CachedPrompt: 0.125, Completion: 10},
	"gpt-5-mini":             {Prompt: 0.25, CachedPrompt: 0.025, Completion: 2},
	"gpt-5-nano":             {Prompt: 0.05, CachedPrompt: 0.005, Completion: 0.40},
	"gpt-4.1":                {Prompt: 2, CachedPrompt: 0.50, Completion: 8},
	"gpt-4.1-mini":           {Prompt: 0.40, CachedPrompt: 0.10, Completion: 1.60},
	"gpt-4.1-nano":           {Prompt: 0.10, CachedPrompt: 0.025, Completion: 0.40},
	"gpt-4o":                 {Prompt: 2.50, CachedPrompt: 1.25, Completion: 10},
	"gpt-4o-2024-05-13":      {Prompt: 5, Completion: 15},
	"gpt-4o-mini":            {Prompt: 0.15, CachedPrompt: 0.075, Completion: 0.60},
	"o3":                     {Prompt: 2, CachedPrompt: 0.50, Completion: 8},
	"o3-mini":                {Prompt: 1.10, CachedPrompt: 0.55, Completion: 4.40},
	"o4-mini":                {Prompt: 1.10, CachedPrompt: 0.275, Completion: 4.40},
	"gpt-3.5-turbo":          {Prompt: 0.50, Completion: 1.50},
	"gpt-3.5-turbo-instruct": {Prompt: 1.50, Completion: 2},
	"ft:gpt-4.1":             {Prompt: 3, CachedPrompt: 0.75, Completion: 12},
	"ft:gpt-4.1-mini":        {Prompt: 0.80, CachedPrompt: 0.20, Completion: 3.20},
	"ft:gpt-4.1-nano":        {Prompt: 0.20, CachedPrompt: 0.05, Completion: 0.80},
	"ft:gpt-4o":              {Prompt: 3.75, CachedPrompt: 1.875, Completion: 15},
	"ft:gpt-4o-mini":         {Prompt: 0.30, CachedPrompt: 0.15, Completion: 1.20},
	"ft:gpt-3.5-turbo":       {Prompt: 3, Completion: 6},
	"deepseek-chat":          {Prompt: 0.28, CachedPrompt: 0.028, Completion: 0.42},
	"deepseek-reasoner":      {Prompt: 0.28, CachedPrompt: 0.028, Completion: 0.42},
}

// CostText is u's cost for a person: "$0.1234"; "unpriced" when tokens were spent and
// no call had a price (never "$0"); "$0.1234 + 3 unpriced calls" when some had none.
func (u Usage) CostText() string {
	return FormatUSD(u.CostUSD, u.UnpricedCalls, "%.4f", "$")
}

// CostPerText is u's cost divided among n (kept or correct episodes), as CostText
// writes it; "-" when n is 0.
func (u Usage) CostPerText(n int) string {
	if n <= 0 {
		return "-"
	}
	return FormatUSD(u.CostUSD/float64(n), u.UnpricedCalls, "%.6f", "$")
}

// WithoutCache is u priced as if the server had cached no prompt token.
func (u Usage) WithoutCache() Usage {
	u.CostUSD, u.CacheSavingUSD = u.CostWithoutCacheUSD(), 0
	return u
}

// FormatUSD writes a cost in US dollars (format for the number, sign before it) that
// leaves out unpriced calls: the number alone when there are none, "unpriced" when
// nothing was priced, else the number and how many calls it leaves out.
func FormatUSD(cost float64, unpriced int, format, sign string) string {
	n := sign + fmt.Sprintf(format, cost)
	switch {
	case unpriced == 0:
		return n
	case cost == 0:
		return "unpriced"
	case unpriced == 1:
		return n + " + 1 unpriced call"
	}
	return n + fmt.Sprintf(" + %d unpriced calls", unpriced)
}

// LookupPrice is the price of model in prices: its own entry, else the longest key that
// is a prefix of its name (so "gpt-4o-mini" prices "gpt-4o-mini-2024-07-18"); a model
// prices does not name is looked up in DefaultPrices the same way.
func LookupPrice(prices map[string]Price, model string) (Price, bool) {
	if p, ok := lookupIn(prices, model); ok {
		return p, true
	}
	return lookupIn(DefaultPrices, model)
}

func lookupIn(prices map[string]Price, model string) (Price, bool) {
	if p, ok := prices[model]; ok {
		return p, true
	}
	best, found := "", false
	for k := range prices {
		if strings.HasPrefix(model, k) && len(k) > len(best) {
			best, found = k, true
		}
	}
	return prices[best], found
}
