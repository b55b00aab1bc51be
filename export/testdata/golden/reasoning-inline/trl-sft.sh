#!/bin/sh
# TRL SFT on openai-chat: the dataset is this directory, whose README.md declares the config "openai-chat"
# (its train and validation files). Set the model; assistant_only_loss trains on the
# assistant turns alone and needs a chat template with generation markers.
cd "$(dirname "$0")" && exec trl sft \
  --model_name_or_path Qwen/Qwen2.5-0.5B-Instruct \
  --dataset_name . --dataset_config openai-chat \
  --dataset_train_split train --dataset_test_split validation \
  --assistant_only_loss true --output_dir trl-sft "$@"
