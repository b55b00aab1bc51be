#!/bin/sh
# TRL SFT on hf-tools: the dataset is this directory, whose README.md declares the config "hf-tools"
# (its train and validation files). assistant_only_loss trains on the assistant turns
# alone and needs a chat template with generation markers (TRL swaps its own in for
# Qwen2.5, Qwen3 and Llama 3).
# The template must render an assistant turn's content (the ReAct thought) beside its
# tool_calls and print string arguments as they are: Qwen3's does (the model below);
# Llama 3.1's and Hermes' drop the thought, so the model would learn to act without
# reasoning, and Qwen2.5's quotes the arguments. For another model, set
# export.chat_template to a template that works (reactgen checks it) and pass it here.
cd "$(dirname "$0")" && exec trl sft \
  --model_name_or_path Qwen/Qwen3-0.6B \
  --dataset_name . --dataset_config hf-tools \
  --dataset_train_split train --dataset_test_split validation \
  --assistant_only_loss true --output_dir trl-sft "$@"
