package episodetest

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// TestFullIsFull: Full sets every field of the record and of the types it
// holds, so the codec tests cover a field as soon as it is added.
func TestFullIsFull(t *testing.T) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice:
			if v.Len() == 0 {
				t.Errorf("%s is empty", path)
			}
			for i := range v.Len() {
				walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
				if v.Index(i).Kind() == reflect.Struct {
					return // the first element shows every field; later ones may be partial
				}
			}
		case reflect.Pointer:
			if v.IsNil() {
				t.Errorf("%s is nil", path)
				return
			}
			walk(path, v.Elem())
		default:
			if v.IsZero() {
				t.Errorf("%s is zero", path)
			}
		}
	}
	walk("Episode", reflect.ValueOf(Full()))
}

// TestIDsAndStream: built episodes carry the ids a run derives, and a stream is the same
// every time it is opened.
func TestIDsAndStream(t *testing.T) {
	ep := Episode("", "q1", "Search[x]", "Finish[Aldbrook]")
	if want := pipeline.EpisodeID(pipeline.TaskHotpotQA, "q1", Method, 0, false); ep.ID != want {
		t.Errorf("Episode id %q, want %q", ep.ID, want)
	}
	if len(ep.Steps) != 2 || ep.Steps[0].ActionType != pipeline.ActionSearch || ep.Steps[1].ActionType != pipeline.ActionFinish {
		t.Errorf("steps: %+v", ep.Steps)
	}
	o := Outcome("q1", 2, pipeline.StopMaxSteps, false)
	if want := pipeline.EpisodeID(pipeline.TaskHotpotQA, "q1", Method, 2, false); o.ID != want || o.Attempt != 2 {
		t.Errorf("Outcome id %q attempt %d, want %q and 2", o.ID, o.Attempt, want)
	}
	if o.Finished || o.Correct || o.Prediction != "" || o.StopReason != pipeline.StopMaxSteps {
		t.Errorf("Outcome: %+v", o)
	}
	var first, second []pipeline.Episode
	for ep := range Stream(10, nil)() {
		first = append(first, ep)
	}
	for ep := range Stream(10, nil)() {
		second = append(second, ep)
	}
	if !reflect.DeepEqual(first, second) || first[0].ID == first[1].ID {
		t.Errorf("Stream is not reproducible or repeats ids")
	}
}

// TestWriteLogDistinct: the log holds n episodes, one per question, each observation cut
// to the words asked and the quoted tail.
func TestWriteLogDistinct(t *testing.T) {
	path := filepath.Join(t.TempDir(), pipeline.EpisodesFile)
	if size := WriteLog(t, path, 30, 4); size <= 0 {
		t.Fatalf("WriteLog: size %d", size)
	}
	seen := map[string]bool{}
	for ep, err := range pipeline.ReadEpisodes(path) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[ep.QuestionID] || ep.Task != pipeline.TaskHotpotQA || ep.Attempt != 0 {
			t.Errorf("%s: question %s again or task %s attempt %d", ep.ID, ep.QuestionID, ep.Task, ep.Attempt)
		}
		seen[ep.QuestionID] = true
		obs := ep.Steps[0].Observation
		if want := "The "; !strings.HasPrefix(obs, want) || len(strings.Fields(strings.Split(obs, ". \"Quoted\"")[0])) != 5 || !strings.HasSuffix(obs, ". \"Quoted\"\tand a\nnew line.") {
			t.Errorf("%s: observation %q, want five words and the quoted tail", ep.ID, obs)
		}
	}
	if len(seen) != 30 {
		t.Errorf("%d questions, want 30", len(seen))
	}
}
