package config

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"text/tabwriter"
	"time"

	"github.com/reactgen/reactgen/pipeline"
)

// keyInfo describes one config key.
type keyInfo struct {
	Key     string
	Default any
	Type    string
	Open    bool // a map whose sub-keys are the user's (llm.headers, llm.prices)
}

// configKeys lists every key of pipeline.Config with its default, derived from the struct
// so that the list cannot drift from the type.
func configKeys() []keyInfo {
	var out []keyInfo
	def := pipeline.Default()
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("mapstructure")
			if tag == "" {
				continue
			}
			key := tag
			if prefix != "" {
				key = prefix + "." + tag
			}
			fv := v.Field(i)
			switch {
			case fv.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)):
				walk(key, fv)
			case fv.Kind() == reflect.Map:
				out = append(out, keyInfo{Key: key, Default: fv.Interface(), Type: typeName(f.Type), Open: true})
			default:
				out = append(out, keyInfo{Key: key, Default: fv.Interface(), Type: typeName(f.Type)})
			}
		}
	}
	walk("", reflect.ValueOf(def))
	return out
}

func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return "duration"
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map"
	case t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "integer"
	}
	return t.Kind().String()
}

// pathKeys are resolved relative to the config file that sets them.
var pathKeys = map[string]bool{
	"task.path": true, "corpus.path": true, "corpus.index": true, "generate.exemplars": true,
	"generate.cot_exemplars": true,
	"filter.eval_files":      true, "llm.cache_dir": true, "env.cache_dir": true,
}

// tokenizerKeys name a tokenizer: an encoding name, or a tokenizer.json path that is
// resolved like pathKeys.
var tokenizerKeys = map[string]bool{"export.tokenizer": true, "filter.token_counter": true}

// WriteKeys prints every key with its type, default and description, as a table in the
// order of pipeline.Config's fields: `reactgen config keys`.
func WriteKeys(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTYPE\tDEFAULT\tDESCRIPTION")
	for _, k := range configKeys() {
		def, _ := json.Marshal(k.Default)
		if s := fmt.Sprint(k.Default); s != "" && string(def) != `""` {
			if _, ok := k.Default.(interface{ Seconds() float64 }); ok {
				def = []byte(s)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Key, k.Type, def, keyDocs[k.Key])
	}
	return tw.Flush()
}

// keyDocs is the one-line description of every config key, shown by `reactgen config
// keys`: the config-key registry. A test checks that every key of pipeline.Config has
// one and that it describes no other.
var keyDocs = map[string]string{
	"run.out":            "run directory (relative to the working directory); --out overrides it",
	"run.id":             "run id written into every record; empty derives one from the result-affecting settings",
	"run.fsync_every":    "fsync episodes.jsonl after this many episodes (1 = every episode)",
	"run.fsync_interval": "and at least this often (e.g. 1s); a killed process loses nothing either way, a machine crash at most this window",
	"run.grace_period":   "after SIGINT/SIGTERM, how long in-flight episodes may finish before they are recorded as interrupted (batch mode: none, so no further wave is submitted; the next run attaches to the batches out)",

	"task.name":     "hotpotqa or fever (Wikipedia), or alfworld or webshop (text games played on the AgentGym server at env.url; docs/agentgym.md)",
	"task.path":     "task file: HotpotQA JSON (official or simplified), FEVER JSONL, or JSONL {id, question, answer}",
	"task.format":   "auto, hotpotqa, hotpotqa-simple, fever or jsonl",
	"task.limit":    "use at most this many questions (0 = all); alfworld and webshop: how many games, required",
	"task.offset":   "skip this many questions first; alfworld and webshop: the first game's AgentGym number",
	"task.skip_bad": "skip malformed task records and count them, instead of failing",
	"task.shard":    "i/n: generate only shard i of n of the questions (a seeded hash of each id; --shard, or JOB_COMPLETION_INDEX / JOB_COMPLETIONS); `reactgen merge` combines the shards",

	"corpus.path":  "corpus source: JSONL {title, text}, FEVER's wiki-pages JSONL, the HotpotQA Wikipedia .bz2 tree, or a HotpotQA question file's context",
	"corpus.index": "index directory; empty means <run>/index, built by `reactgen run` when missing",

	"env.backend":                  "local (the on-disk index) or mediawiki (a live MediaWiki Action API); alfworld and webshop are played on env.url",
	"env.url":                      "alfworld and webshop: the AgentGym environment server, e.g. http://127.0.0.1:36001 (docs/agentgym.md)",
	"env.mediawiki_url":            "MediaWiki api.php endpoint, e.g. https://en.wikipedia.org/w/api.php",
	"env.user_agent":               "User-Agent sent to MediaWiki (their policy asks for a contact)",
	"env.requests_per_second":      "MediaWiki request rate limit",
	"env.cache_dir":                "MediaWiki response cache; empty means <run>/wiki-cache",
	"env.timeout":                  "timeout of one MediaWiki or AgentGym request (an AgentGym WebShop /create loads its products: allow minutes)",
	"env.observations":             "paper (default: the official environment's observations, byte for byte) or rules (reactgen's sentence splitter and messages; docs/paper-fidelity.md)",
	"env.actions":                  "paper (default: an action is the official startswith/endswith form) or lenient (any case, text after ], a missing ], as small models write)",
	"env.sentences":                "sentences a successful Search returns (the paper: 5)",
	"env.max_observation_chars":    "rules observations are cut to this many characters (paper observations never are)",
	"env.max_consecutive_failures": "stop the run (exit 1) once this many environment steps in a row failed, such as a MediaWiki that cannot be reached, before more model requests are paid for (0 = never stop)",

	"serve.max_sessions":   "serve-env: WebSocket sessions open at once; one more gets OpenEnv's CAPACITY_REACHED (OpenEnv's own default is 1)",
	"serve.idle_timeout":   "serve-env: a WebSocket session that sends nothing for this long is closed with 1008 (0 = never)",
	"serve.max_body_bytes": "serve-env: the largest HTTP request body (413 beyond it) and WebSocket message (closed with 1009)",
	"serve.drain_timeout":  "serve-env: after SIGTERM, how long HTTP requests and the message each session is handling may finish before the rest is cut",

	"llm.base_url":                "OpenAI-compatible server; empty means $OPENAI_BASE_URL, else https://api.openai.com/v1",
	"llm.model":                   "model name sent to the server; also the episodes' policy",
	"llm.api_key_env":             "name of the environment variable holding the API key (the key itself is never configured)",
	"llm.temperature":             "sampling temperature of the first attempt (0 = greedy, the paper's ReAct setting)",
	"llm.top_p":                   "nucleus sampling top_p",
	"llm.request_max_tokens":      "max_tokens of each request",
	"llm.stop":                    "extra stop sequences, added to the layout's own",
	"llm.seed":                    "seed sent with every request (servers that support it sample reproducibly)",
	"llm.headers":                 "extra HTTP headers (every value is redacted wherever it is shown or stored)",
	"llm.timeout":                 "timeout of one request",
	"llm.stall_timeout":           "with llm.endpoints: a request with no answer after this long moves to another endpoint that is up (the stalled one counts a failure); 0 = wait for llm.timeout",
	"llm.max_retries":             "retries of a request on 429, 5xx, timeouts and connection errors",
	"llm.backoff_base":            "first retry delay; doubles each retry, with full jitter",
	"llm.backoff_max":             "longest retry delay (Retry-After is honoured beyond it)",
	"llm.concurrency":             "requests in flight at once",
	"llm.rpm":                     "requests per minute (0 = unlimited)",
	"llm.tpm":                     "tokens per minute (0 = unlimited)",
	"llm.max_requests":            "budget: stop cleanly (resumably) after this many requests (0 = unlimited)",
	"llm.max_tokens":              "budget: stop cleanly after this many tokens in total (0 = unlimited)",
	"llm.max_cost_usd":            "budget: stop cleanly after this much money, by llm.prices and the built-in table (0 = unlimited); a config whose model neither prices is refused, as the budget could not count",
	"llm.prices":                  "per model: {prompt, completion, cached_prompt: USD per 1M tokens}, over the built-in table of well-known models (dated 2025-09-30; ft:<base> for fine-tuned ones); cached_prompt prices the prompt tokens the server reports as cached (0 = the prompt price); a model neither prices shows as unpriced, never $0",
	"llm.cache":                   "cache responses on disk, keyed by the full request, so a re-run pays for nothing",
	"llm.cache_dir":               "response cache; empty means <run>/llm-cache",
	"llm.mode":                    "online (one request per call) or batch (each wave of pending steps goes out as one batch at the batch price; docs/scale.md)",
	"llm.think_tags":              "split a leading <think>…</think> block of each reply's text off as the step's reasoning (servers that inline a reasoning model's thinking; docs/servers.md)",
	"llm.logprobs":                "ask for and keep the log-probability of every completion token (calls[].logprobs; exported as Arrow and Parquet columns); off, requests are unchanged",
	"llm.token_ids":               "ask a vLLM server (>= 0.10.2) for the prompt's and completion's token ids (return_token_ids; OpenAI's API refuses it) and keep them (calls[].prompt_token_ids, completion_token_ids)",
	"llm.batch.backend":           "batch mode: openai (the Files and Batches API at llm.base_url) or files (wave files under llm.batch.dir for `vllm run-batch`)",
	"llm.batch.window":            "batch mode: a wave closes once no request has joined it for this long",
	"llm.batch.max_lines":         "batch mode: a wave closes at this many requests (OpenAI takes up to 50,000)",
	"llm.batch.max_bytes":         "batch mode: a wave closes before its input file passes this many bytes (OpenAI takes files up to 200 MB)",
	"llm.batch.poll":              "batch mode: the longest wait between reads of a batch's status (the first comes after 250ms, then the wait doubles up to this)",
	"llm.batch.completion_window": "batch mode: the batches' completion_window (OpenAI: 24h)",
	"llm.batch.price_factor":      "batch mode: batch tokens cost this fraction of llm.prices (OpenAI: 0.5)",
	"llm.batch.dir":               "batch mode: wave files and batches.json; empty means <run>/batches",
	"llm.endpoints":               "a pool of servers in place of base_url alone: a list of maps with base_url, model, api_key_env, concurrency, rpm, tpm, headers, prices (unset ones fall back to llm.*) and weight (default 1; 0 = reserve); requests go to the endpoint with room, failing ones are taken out and probed back (docs/scale.md)",

	"generate.policy":             "llm (prompt the model) or expert (play from gold supporting facts; no model)",
	"generate.method":             "standard, cot, cot-sc, act, react, react-cot-sc or cot-sc-react",
	"generate.format":             "completion (the paper's text layout), chat, or tools (chat with the functions search, lookup and finish as native tool calls; react, act and the hybrids)",
	"generate.exemplars":          "empty = the embedded exemplars for the task; FILE (reactgen JSON) or FILE#key (the paper's prompt files)",
	"generate.cot_exemplars":      "the CoT prompts' own exemplars (cot, cot-sc and the CoT half of react-cot-sc and cot-sc-react), e.g. prompts_naive.json#cotqa_simple6; empty = derived from generate.exemplars",
	"generate.num_exemplars":      "use only the first N exemplars (0 = all)",
	"generate.instruction":        "replace the task's instruction text",
	"generate.max_steps":          "step limit (0 = the paper's: 7 for HotpotQA, 5 for FEVER)",
	"generate.attempts":           "attempts per question, one after another and only while the question is not solved (it holds what the filter keeps of it, filter.max_per_question); attempts after the first sample at generate.sample_temperature",
	"generate.concurrency":        "episodes in flight at once (online; in batch mode every question's episode is in flight, up to llm.batch.max_lines, so a wave holds every pending step)",
	"generate.target_correct":     "stop once this many episodes exist that the filter will keep (correct and distinct per question under dedupe, this run's and earlier runs'; 0 = no target)",
	"generate.seed":               "seed of the question order and the per-attempt request seeds",
	"generate.shuffle":            "take the questions in a seeded shuffled order",
	"generate.samples":            "CoT-SC samples per question (the paper: 21)",
	"generate.sample_temperature": "temperature of CoT-SC samples and of later attempts (the paper: 0.7)",
	"generate.rationalize":        "STaR rationalization: retry failed questions with the gold answer as a hint (dropped from the record)",
	"generate.keep_prompts":       "store each request's full prompt in the episode (otherwise only its hash)",
	"generate.progress":           "auto, bar, lines or off (progress goes to stderr)",
	"generate.prompting":          "few-shot (instruction and exemplars) or trained: a fine-tuned model gets exactly what the export rendered before a training example's first assistant turn (export.system if set, the question turn), no exemplars, no instruction; methods react, act, standard",
	"generate.trained_format":     "with prompting trained: the export format the model was trained on (chat: openai-chat, axolotl-chat, sharegpt, agentgym; completion: completion; tools: openai-tools, hf-tools, sharegpt-tools); empty = the first of these",

	"star.previous": "STaR: round k's run directory; this run is round k+1: it generates only on the questions round k did not solve (with generate.rationalize, hinted retries of the rest), carries round k's kept episodes into its log, and the filter judges both under one dedupe policy; the manifest records each round and its model",

	"filter.rules":             "rules in order: correct, finished, answered_by, max_steps, no_invalid_actions, no_bad_calls, no_loops, max_tokens, dedupe, decontaminate, balance",
	"filter.min_f1":            "correct: also keep HotpotQA answers with at least this F1 (0 = exact match only)",
	"filter.min_reward":        "correct: also keep alfworld and webshop episodes whose reward is at least this (WebShop's near-misses; 0 = reward 1 only)",
	"filter.max_steps":         "max_steps: keep episodes with at most this many steps",
	"filter.max_tokens":        "max_tokens: the serialised example must fit this many tokens",
	"filter.token_counter":     "tokenizer for max_tokens: o200k_base, cl100k_base or a tokenizer.json path (empty = export.tokenizer)",
	"filter.max_per_question":  "dedupe: keep at most this many episodes per question (0 = no cap)",
	"filter.dedupe_policy":     "dedupe: which to keep: first, shortest or diverse",
	"filter.eval_files":        "decontaminate: evaluation question files (any task file format; answers optional) whose questions must not be trained on",
	"filter.balance_by":        "balance: label (FEVER) or type (HotpotQA)",
	"filter.balance_tolerance": "balance: allowed deviation from equal shares",
	"filter.answered_by":       "answered_by: keep episodes answered by these methods (react, act, cot, cot-sc, standard; a hybrid's branch that answered); the default react, act keeps trajectories the agent walked",
	"filter.mask_steps":        "keep near-miss episodes with these steps masked (no loss on them in the export): invalid_action, repeated_search, error_observation; docs/formats.md, Masked steps",

	"export.formats":             "openai-chat, axolotl-chat, completion, alpaca, sharegpt, agentgym; tool calling: openai-tools, hf-tools, sharegpt-tools; trajectory interchange: adp (ADP 1.2.0), atif (ATIF-v1.7); arrow (HF save_to_disk), arrow-file, parquet (HF Hub layout); docs/formats.md",
	"export.reasoning":           "where a step's reasoning text goes: keep (reasoning_content on the assistant messages of openai-chat, openai-tools, axolotl-chat and agentgym, and the Arrow/Parquet columns), drop, or inline (<think>…</think> before the thought in the trained text of every format; docs/formats.md#reasoning)",
	"export.compression":         "JSONL compression: none, zstd or gzip",
	"export.system":              "system message for chat formats (empty = none)",
	"export.card_charts":         "a `reactgen compare --out` directory: its charts (charts/*.svg, and the PNGs of compare --png) are copied to plots/compare/ and shown in the dataset card; empty = none",
	"export.weights":             "openai-chat: a weight on every assistant message: 0 on the steps the filter masked (filter.mask_steps), 1 on the others",
	"export.train_observations":  "train on observation turns too, where the format can say so (axolotl-chat, agentgym, Arrow/Parquet trainable; completion and alpaca then write the whole trajectory as one row); off: no observation is trained on (completion and alpaca write one row per step); docs/formats.md, Which turns carry loss",
	"export.observation_role":    "sharegpt: give observations LLaMA-Factory's observation role",
	"export.validation_fraction": "share of questions in the validation split (by question id: no question on both sides)",
	"export.split_seed":          "seed of the train/validation split",
	"export.shard_rows":          "start a new shard after this many rows (0 = one shard)",
	"export.shard_bytes":         "start a new shard after this many bytes (0 = no limit)",
	"export.views":               "react, act (thoughts removed): trajectories the agent walked to its own Finish; cot: the winning chain of a cot or cot-sc answer; standard (question and answer)",
	"export.pairs":               "also write DPO preference pairs for questions with a correct and a failed trajectory",
	"export.correct_only":        "fail the export if an example is not correct",
	"export.max_tokens":          "leave out (and count) episodes whose chat exceeds this many tokens in any view (0 = no limit)",
	"export.tokenizer":           "token counts of the export and the card: o200k_base (embedded), cl100k_base (embedded) or a model's tokenizer.json path",
	"export.chat_template":       "a model's chat template (a Jinja file or the model's tokenizer_config.json): adds chat-text JSONL (the text it renders of each example in the tool-calling layout and the character spans of its {% generation %} tags, the loss mask), token counts then come from that text, and the TRL and axolotl hand-offs use it; a template that would drop the thought beside a tool call, or marks no generation spans, is refused",
}
