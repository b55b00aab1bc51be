// Package config reads a command's configuration into a pipeline.Config: the defaults,
// then a YAML file or a run's recorded config, then REACTGEN_* environment variables,
// then --set flags, merged by viper and decoded strictly (an unknown key, a wrong type or
// a value out of range is an error naming the key and where it was set, with the nearest
// valid key). keys.go is the registry of keys: every key of pipeline.Config with its
// type, default and one-line description (`reactgen config keys`).
//
// The config belongs to the pipeline, which orchestrates the run (issue 22: "pipeline/
// orchestrates ... and owns the config"); this overrides STYLE.md's "viper lives in cmd
// only". It is a package of its own so that pipeline itself imports no viper and no
// tokenizer. It may import pipeline (the typed config it fills), viper and YAML, and
// the leaf libraries internal/bpe and internal/levenshtein; never a stage. The names a
// config uses (policies, methods, backends, rules, formats, views) are resolved by the
// check the command line hands in (Source.Check), as only cmd/reactgen knows what
// implements them. The stages receive their typed section and never import this package.
package config
