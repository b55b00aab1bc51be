package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestKubernetesIndexedJob reads deploy/kubernetes/indexed-job.yaml: the config it ships
// loads, the Job is Indexed with JOB_COMPLETIONS equal to its completions, the data volume
// is mounted read-only, every shard writes its own directory, and the container's
// arguments are ones reactgen generate accepts.
func TestKubernetesIndexedJob(t *testing.T) {
	f, err := os.Open("../../deploy/kubernetes/indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type container struct {
		Args []string `yaml:"args"`
		Env  []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	var config string
	var job struct {
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Template       struct {
				Spec struct {
					Containers []container `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(f)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := yaml.Marshal(doc)
		switch doc["kind"] {
		case "ConfigMap":
			config = doc["data"].(map[string]any)["hotpotqa.yaml"].(string)
		case "Job":
			if err := yaml.Unmarshal(b, &job); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "hotpotqa.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := invoke(t, "", nil, "config", "show", "--config", path); res.code != 0 {
		t.Errorf("the ConfigMap's config does not load: %s", res.stderr)
	}
	if job.Spec.CompletionMode != "Indexed" || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("job: %+v", job.Spec)
	}
	c := job.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if _, ok := env["JOB_COMPLETION_INDEX"]; !ok || env["JOB_COMPLETIONS"] != "16" || job.Spec.Completions != 16 {
		t.Errorf("env %v, completions %d: JOB_COMPLETIONS must equal completions", env, job.Spec.Completions)
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "data" && !m.ReadOnly {
			t.Errorf("the data volume (index and task file) is not mounted read-only")
		}
	}
	args := strings.Join(c.Args, " ")
	if c.Args[0] != "generate" || !strings.Contains(args, "--out=/out/shard-$(JOB_COMPLETION_INDEX)") {
		t.Errorf("args %q: want generate into a directory per shard", args)
	}
	cmd, _, err := newApp(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }).root().Find(c.Args)
	if err != nil || cmd.Name() != "generate" {
		t.Fatalf("args %q: %v", args, err)
	}
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Errorf("args %q: %v", args, err)
	}
}
