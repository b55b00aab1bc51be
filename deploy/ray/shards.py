"""reactgen in N shards as one Ray job (docs/scale.md).

Each Ray task runs `reactgen generate --shard i/N` into its own directory of shared
storage (a path every node mounts), then the driver merges them. Submit with:

    ray job submit --working-dir deploy/ray -- python shards.py \
        --shards 16 --config /shared/hotpotqa.yaml --out /shared/runs/hotpotqa

The reactgen binary must be on every node's PATH and OPENAI_API_KEY in its environment
(pass it with --runtime-env-json '{"env_vars": {"OPENAI_API_KEY": "..."}}').
"""

import argparse
import subprocess

import ray


@ray.remote(num_cpus=2, max_retries=3)
def shard(config: str, out: str, i: int, n: int) -> str:
    # A retried task resumes its run directory: finished episodes are kept.
    path = f"{out}/shard-{i}"
    subprocess.run(["reactgen", "generate", "--config", config, "--out", path, "--shard", f"{i}/{n}"], check=True)
    return path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shards", type=int, required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    ray.init()
    dirs = ray.get([shard.remote(a.config, a.out, i, a.shards) for i in range(a.shards)])
    merged = f"{a.out}/all"
    subprocess.run(["reactgen", "merge", merged, *dirs], check=True)
    for stage in ("filter", "export"):
        subprocess.run(["reactgen", stage, "--config", a.config, "--out", merged], check=True)


if __name__ == "__main__":
    main()
