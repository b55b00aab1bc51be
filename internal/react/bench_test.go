package react

import "testing"

func BenchmarkStep(b *testing.B) {
	const c = "Thought 3: The observation says the mill stands on the Aldbrook, so I should look up the river.\nAction 3: Lookup[Aldbrook]\nObservation 3: invented text"
	for b.Loop() {
		Step(c, 3)
	}
}

// BenchmarkStepStopped is the usual chat completion: the stop sequence ended it before an
// observation of the model's own.
func BenchmarkStepStopped(b *testing.B) {
	const c = "Thought: The mill stands on the Aldbrook, so I should look up the river.\nAction: Lookup[Aldbrook]"
	for b.Loop() {
		Step(c, 3)
	}
}
