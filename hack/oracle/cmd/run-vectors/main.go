// Command run-vectors replays scheduler conformance vectors (the format described in the
// conformance README: source, note, estimatorReplicas, objects, expect) against any binary
// that implements `simulate -f PATH [--estimator-replicas C=N ...] -o json`, e.g.
// karmada-scheduler or karmada-oracle.
//
// Usage: run-vectors BINARY PATH... (a PATH may be a vector file or a directory of *.yaml)
// Exit status 0 when every vector passes, 1 otherwise.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

type vector struct {
	Source            string           `json:"source"`
	Note              string           `json:"note"`
	EstimatorReplicas map[string]int32 `json:"estimatorReplicas"`
	Flags             []string         `json:"flags"`
	Queue             any              `json:"queue"`
	Objects           []map[string]any `json:"objects"`
	Expect            []expectation    `json:"expect"`
}

type expectation struct {
	Name            string     `json:"name"`
	Result          string     `json:"result"`
	Clusters        *[]cluster `json:"clusters"`
	MessageContains string     `json:"messageContains"`
}

type cluster struct {
	Name       string      `json:"name"`
	Replicas   int32       `json:"replicas"`
	Components []component `json:"components,omitempty"`
}

type component struct {
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
}

type result struct {
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Result    string    `json:"result"`
	Clusters  []cluster `json:"clusters"`
	Message   string    `json:"message"`
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: run-vectors BINARY PATH...")
		os.Exit(2)
	}
	bin := os.Args[1]
	var files []string
	for _, p := range os.Args[2:] {
		st, err := os.Stat(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if st.IsDir() {
			m, _ := filepath.Glob(filepath.Join(p, "*.yaml"))
			files = append(files, m...)
		} else {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	passed, failed := 0, 0
	for _, f := range files {
		if err := runOne(bin, f); err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", f, err)
		} else {
			passed++
			fmt.Printf("ok   %s\n", f)
		}
	}
	fmt.Printf("vectors: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

func runOne(bin, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var v vector
	if err := yaml.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("parse: %v", err)
	}
	if v.Queue != nil {
		// A scheduling-queue vector: replayed by the Rust queue tests, not through simulate.
		return nil
	}
	var input bytes.Buffer
	var bindings []map[string]any
	for i, o := range v.Objects {
		doc, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if i > 0 {
			input.WriteString("---\n")
		}
		input.Write(doc)
		if k, _ := o["kind"].(string); k == "ResourceBinding" || k == "ClusterResourceBinding" {
			bindings = append(bindings, o)
		}
	}
	tmp, err := os.CreateTemp("", "vector-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(input.Bytes()); err != nil {
		return err
	}
	tmp.Close()

	args := []string{"simulate", "-f", tmp.Name()}
	names := make([]string, 0, len(v.EstimatorReplicas))
	for n := range v.EstimatorReplicas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		args = append(args, "--estimator-replicas", fmt.Sprintf("%s=%d", n, v.EstimatorReplicas[n]))
	}
	args = append(args, v.Flags...)
	args = append(args, "-o", "json")
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // the exit status is not checked, only stdout
	var got []result
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		return fmt.Errorf("stdout is not a JSON result array: %v; stderr: %s", err, strings.TrimSpace(stderr.String()))
	}
	if len(got) != len(bindings) {
		return fmt.Errorf("got %d results for %d bindings", len(got), len(bindings))
	}
	if len(v.Expect) != len(bindings) {
		return fmt.Errorf("vector has %d expectations for %d bindings", len(v.Expect), len(bindings))
	}
	var problems []string
	for i, b := range bindings {
		kind, _ := b["kind"].(string)
		md, _ := b["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		if kind == "ClusterResourceBinding" {
			ns = ""
		}
		g, e := got[i], v.Expect[i]
		if g.Kind != kind || g.Namespace != ns || g.Name != name {
			problems = append(problems, fmt.Sprintf("#%d: got %s %s/%s, want %s %s/%s", i, g.Kind, g.Namespace, g.Name, kind, ns, name))
			continue
		}
		if g.Result != e.Result {
			problems = append(problems, fmt.Sprintf("%s: result %s (%q), want %s", name, g.Result, g.Message, e.Result))
		}
		if e.Clusters != nil && !sameSet(g.Clusters, *e.Clusters) {
			problems = append(problems, fmt.Sprintf("%s: clusters %v, want %v", name, g.Clusters, *e.Clusters))
		}
		if e.Clusters != nil {
			for _, want := range *e.Clusters {
				if want.Components == nil {
					continue
				}
				var have []component
				for _, c := range g.Clusters {
					if c.Name == want.Name {
						have = c.Components
					}
				}
				if fmt.Sprint(have) != fmt.Sprint(want.Components) {
					problems = append(problems, fmt.Sprintf("%s: components in %s %v, want %v", name, want.Name, have, want.Components))
				}
			}
		}
		if e.MessageContains != "" && !strings.Contains(g.Message, e.MessageContains) {
			problems = append(problems, fmt.Sprintf("%s: message %q does not contain %q", name, g.Message, e.MessageContains))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func sameSet(a, b []cluster) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(c cluster) string { return fmt.Sprintf("%s=%d", c.Name, c.Replicas) }
	m := map[string]int{}
	for _, c := range a {
		m[key(c)]++
	}
	for _, c := range b {
		m[key(c)]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
