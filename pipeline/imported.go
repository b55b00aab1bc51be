package pipeline

// Imported is what the import stage records in a run's manifest (Results) about the
// corpus it read, and what the export stage reads back for the dataset card: the one
// definition of those result keys, since the two stages do not import each other.
type Imported struct {
	Format string // import.format: adp or atif; empty: the run was generated, not imported
	Source string // import.source: where the corpus came from
	Model  string // import.model: the model that wrote its trajectories
}

// The manifest's result keys for Imported.
const (
	ResultImportFormat = "import.format"
	ResultImportSource = "import.source"
	ResultImportModel  = "import.model"
)

// Record writes im into results under its keys.
func (im Imported) Record(results map[string]string) {
	results[ResultImportFormat] = im.Format
	results[ResultImportSource] = im.Source
	results[ResultImportModel] = im.Model
}

// ImportedOf reads Imported from a manifest's results; ok is false when the run was not
// imported (no import.format).
func ImportedOf(results map[string]string) (im Imported, ok bool) {
	im = Imported{Format: results[ResultImportFormat], Source: results[ResultImportSource], Model: results[ResultImportModel]}
	return im, im.Format != ""
}
