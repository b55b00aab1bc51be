package ingest

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Provenance says where imported trajectories come from: the corpus and the model that
// produced them. The dataset card of an imported run names these, not the importing
// config's model.
type Provenance struct {
	Source string // the corpus, e.g. "FireAct (Chen et al. 2023)"
	Model  string // the model that generated the trajectories, "unknown" when not known
}

// trajsModel reads the agent out of FireAct's dump names, trajs_<task>_<split>_<model>.json.
var trajsModel = regexp.MustCompile(`^trajs_[a-z]+_[a-z]+_(.+)\.json$`)

// DefaultProvenance is what the formats say of themselves: FireAct's OpenAI chat and
// Alpaca files hold its GPT-4 trajectories; its trajectory dumps are the outputs of the
// agent their file name names; the paper's transcripts were printed by its GPT-3
// (text-davinci-002) runs. Any of it is overridden by reactgen import's --source and
// --source-model.
func DefaultProvenance(format string, files []string) Provenance {
	switch format {
	case "openai-chat", "alpaca":
		return Provenance{Source: "FireAct (Chen et al. 2023)", Model: "gpt-4"}
	case "fireact-trajs":
		p := Provenance{Source: "FireAct (Chen et al. 2023)", Model: "unknown"}
		if len(files) > 0 {
			if m := trajsModel.FindStringSubmatch(filepath.Base(files[0])); m != nil {
				p.Model = m[1]
			}
		}
		return p
	case "react-transcript":
		p := Provenance{Source: "ReAct (Yao et al. 2023) transcripts", Model: "unknown"}
		if len(files) > 0 && strings.Contains(filepath.Base(files[0]), "text-davinci-002") {
			p.Model = "text-davinci-002"
		}
		return p
	case "adp":
		return Provenance{Source: "Agent Data Protocol trajectories", Model: "unknown"}
	case "atif":
		return Provenance{Source: "ATIF trajectories", Model: "unknown"}
	}
	return Provenance{Source: format, Model: "unknown"}
}
