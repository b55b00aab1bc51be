package parse

import "testing"

func BenchmarkStep(b *testing.B) {
	const c = "Thought 3: The observation says the mill stands on the Aldbrook, so I should look up the river.\nAction 3: Lookup[Aldbrook]\nObservation 3: invented text"
	for b.Loop() {
		Step(c, 3)
	}
}
