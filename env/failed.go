package env

import "strings"

// Failed reports whether an observation is the environment's answer to an action it
// could not carry out: an invalid action ("Invalid action: …", in both observation
// modes), or a rules-mode Lookup with no page to look in (NoPageObservation). A Search
// that found no page (Could not find …) is an answer, not a failure; and a paper-mode
// Lookup with no page answers "No more results.", as wikienv.py does, which cannot be
// told from a Lookup that ran out of matches.
func Failed(observation string) bool {
	return strings.HasPrefix(observation, "Invalid action") || observation == NoPageObservation
}
