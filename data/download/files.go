package download

// Paper lists the files of the paper's setup, from their publishers' addresses. Sizes
// and SHA-256 sums are the publishers' files as recorded by the sources named in each
// entry's Source; the files of the ReAct repository are pinned to its commit 6bdb3a1f,
// whose git blob ids match the copies these sums were taken from.
var Paper = []File{
	{
		Set: "hotpotqa", Path: "hotpotqa/hotpot_train_v1.1.json",
		URL:    "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_train_v1.1.json",
		Size:   566426227,
		SHA256: "26650cf50234ef5fb2e664ed70bbecdfd87815e6bffc257e068efea5cf7cd316",
		Source: "HotpotQA training questions (Yang et al. 2018), CC BY-SA 4.0; sum as recorded in huggingface/datasets hotpot_qa/dataset_infos.json",
	},
	{
		Set: "hotpotqa", Path: "hotpotqa/hotpot_dev_distractor_v1.json",
		URL:    "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json",
		Size:   46320117,
		SHA256: "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea",
		Source: "HotpotQA dev questions with supporting facts; sum as recorded in huggingface/datasets hotpot_qa/dataset_infos.json",
	},
	{
		Set: "hotpotqa", Path: "hotpotqa/hotpot_dev_v1_simplified.json",
		URL:    reactRepo + "data/hotpot_dev_v1_simplified.json",
		Size:   1179017,
		SHA256: "05001dcdeb2b2b2243a88f23daaf8de9237494cd387e13bc25854d3e031101d3",
		Source: "the dev questions the paper's notebook reads (ysymyth/ReAct data/, git blob 91c0a8bd)",
	},
	{
		Set: "hotpotqa", Path: "hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2",
		URL:    "https://nlp.stanford.edu/projects/hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2",
		Size:   1553565403,
		SHA256: "1acca1c5cc93c4890ea51091d2bad7c3ef6987aead127ab88728dc9e26555729",
		Unpack: UnpackTarBz2,
		Source: "the Wikipedia abstracts dump the HotpotQA authors publish (first paragraphs of the 2017-10-01 English Wikipedia, CC BY-SA 3.0); size and sum as a third party recorded them, not the publisher",
	},
	{
		Set: "fever", Path: "fever/train.jsonl",
		URL:    "https://fever.ai/download/fever/train.jsonl",
		Size:   33024303,
		SHA256: "eba7e8f87076753f8494718b9a857827af7bf73e76c9e4b75420207d26e588b6",
		Source: "FEVER training claims (Thorne et al. 2018), CC BY-SA 3.0; sum as recorded in huggingface/datasets fever/dataset_infos.json",
	},
	{
		Set: "fever", Path: "fever/paper_dev.jsonl",
		URL:    "https://fever.ai/download/fever/paper_dev.jsonl",
		Size:   2168767,
		SHA256: "41158707810008747946bf23471e82df53e77a513524b9e3ec1c2e674ef5ef8c",
		Source: "FEVER paper_dev, the claims the paper evaluates on; the same sum in huggingface/datasets fever/dataset_infos.json and for ysymyth/ReAct data/paper_dev.jsonl (git blob 722231a8)",
	},
	{
		Set: "fever", Path: "fever/wiki-pages.zip",
		URL:    "https://fever.ai/download/fever/wiki-pages.zip",
		Size:   1713485474,
		SHA256: "4b06d95da6adf7fe02d2796176c670dacccb21348da89cba4c50676ab99665f2",
		Unpack: UnpackZip,
		Source: "FEVER's Wikipedia dump (2017-06, 5.4M pages in 109 JSONL files); sum as recorded in huggingface/datasets fever/dataset_infos.json",
	},
	{
		Set: "prompts", Path: "react-prompts/prompts_naive.json",
		URL:    reactRepo + "prompts/prompts_naive.json",
		Size:   38129,
		SHA256: "f35e8c17bbd620b90857712484c51005f5440641a37cff0b042b82ac7f3d71b5",
		Source: "the paper's HotpotQA prompts (ysymyth/ReAct prompts/, MIT, git blob df909741)",
	},
	{
		Set: "prompts", Path: "react-prompts/fever.json",
		URL:    reactRepo + "prompts/fever.json",
		Size:   6853,
		SHA256: "bfd7793d8766e020a817c8a56b2228f230298fb161f9fa87fa543b4b38d46c03",
		Source: "the paper's FEVER prompts (ysymyth/ReAct prompts/, MIT, git blob 9a90695b)",
	},
	{
		Set: "prompts", Path: "react-prompts/alfworld_3prompts.json",
		URL:    reactRepo + "prompts/alfworld_3prompts.json",
		Size:   62340,
		SHA256: "a10976b4ae99f4802aa9e621933bb71065ae103f2bd273a24466ab1005fbc45a",
		Source: "the paper's ALFWorld prompts (ysymyth/ReAct prompts/, MIT, git blob 0e7c2048)",
	},
}

// reactRepo is the ReAct repository's raw files at the commit the paper's prompts and
// data were taken from.
const reactRepo = "https://raw.githubusercontent.com/ysymyth/ReAct/6bdb3a1fd38b8188fc7ba4102969fe483df8fdc9/"

// Sets are the names --only accepts, in the order they are fetched.
var Sets = []string{"prompts", "hotpotqa", "fever"}
