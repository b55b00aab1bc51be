#!/bin/sh
# TRL SFT on openai-chat: the dataset is this directory, whose README.md declares the config "openai-chat"
# (its train and validation files). assistant_only_loss trains on the assistant turns
# alone and needs a chat template with generation markers (TRL swaps its own in for
# Qwen2.5, Qwen3 and Llama 3).
cd "$(dirname "$0")" && exec trl sft \
  --model_name_or_path Qwen/Qwen2.5-0.5B-Instruct \
  --dataset_name . --dataset_config openai-chat \
  --dataset_train_split train --dataset_test_split validation \
  --assistant_only_loss true --output_dir trl-sft "$@"
