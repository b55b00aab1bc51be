package tool_test

import (
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// A game action and its function call convert into each other for every command of the
// action sets, and what no command matches, or a call that does not fit, is refused.
func TestGameCommandsRoundTrip(t *testing.T) {
	cases := []struct {
		task, text, name, args string
	}{
		{pipeline.TaskALFWorld, "go to countertop 1", "goto", `{"recep":"countertop 1"}`},
		{pipeline.TaskALFWorld, "take mug 2 from cabinet 10", "take", `{"obj":"mug 2","recep":"cabinet 10"}`},
		{pipeline.TaskALFWorld, "put mug 2 in/on coffeemachine 1", "put", `{"obj":"mug 2","recep":"coffeemachine 1"}`},
		{pipeline.TaskALFWorld, "open fridge 1", "open", `{"recep":"fridge 1"}`},
		{pipeline.TaskALFWorld, "close fridge 1", "close", `{"recep":"fridge 1"}`},
		{pipeline.TaskALFWorld, "toggle desklamp 1", "toggle", `{"obj":"desklamp 1"}`},
		{pipeline.TaskALFWorld, "heat egg 1 with microwave 1", "heat", `{"obj":"egg 1","recep":"microwave 1"}`},
		{pipeline.TaskALFWorld, "cool pan 1 with fridge 1", "cool", `{"obj":"pan 1","recep":"fridge 1"}`},
		{pipeline.TaskALFWorld, "clean lettuce 1 with sinkbasin 1", "clean", `{"obj":"lettuce 1","recep":"sinkbasin 1"}`},
		{pipeline.TaskALFWorld, "use desklamp 1", "use", `{"obj":"desklamp 1"}`},
		{pipeline.TaskALFWorld, "examine book 1", "examine", `{"target":"book 1"}`},
		{pipeline.TaskALFWorld, "inventory", "inventory", `{}`},
		{pipeline.TaskALFWorld, "look", "look", `{}`},
		{pipeline.TaskALFWorld, "think: First I need a mug.", "think", `{"thought":"First I need a mug."}`},
		{pipeline.TaskWebShop, "search[3 ounce bright citrus deodorant]", "search", `{"keywords":"3 ounce bright citrus deodorant"}`},
		{pipeline.TaskWebShop, "click[Buy Now]", "click", `{"item":"Buy Now"}`},
		{pipeline.TaskWebShop, "click[< Prev]", "click", `{"item":"< Prev"}`},
		{pipeline.TaskWebShop, "think[B078GWRC1J fits & is cheap]", "think", `{"thought":"B078GWRC1J fits & is cheap"}`},
	}
	for _, c := range cases {
		name, args, ok := tool.ParseCommand(c.task, c.text)
		if !ok || name != c.name || args != c.args {
			t.Errorf("ParseCommand(%s, %q) = %s %s %v, want %s %s", c.task, c.text, name, args, ok, c.name, c.args)
			continue
		}
		text, err := tool.CommandText(c.task, name, args, true)
		if err != nil || text != c.text {
			t.Errorf("CommandText(%s, %s) = %q, %v, want %q", name, args, text, err, c.text)
		}
		if !tool.ValidFor(c.task, name) {
			t.Errorf("%s is not valid for %s", name, c.task)
		}
	}
	for _, c := range []struct{ task, text string }{
		{pipeline.TaskALFWorld, "fly to the moon"}, {pipeline.TaskALFWorld, "go to"}, {pipeline.TaskWebShop, "buy[it]"},
		{pipeline.TaskWebShop, "search[]"},
	} {
		if name, _, ok := tool.ParseCommand(c.task, c.text); ok {
			t.Errorf("%s %q read as %s", c.task, c.text, name)
		}
	}
	for _, c := range []struct {
		task, name, args string
		thoughts         bool
		want             string
	}{
		{pipeline.TaskALFWorld, "fly", `{}`, true, "unknown function"},
		{pipeline.TaskALFWorld, "think", `{"thought":"x"}`, false, "unknown function"},
		{pipeline.TaskALFWorld, "take", `{"obj":"mug 1"}`, true, `missing argument "recep"`},
		{pipeline.TaskALFWorld, "take", `{"obj":"mug 1","recep":" ","x":"y"}`, true, "not a non-empty string"},
		{pipeline.TaskALFWorld, "open", `{"recep":"fridge 1","obj":"x"}`, true, `unexpected argument "obj"`},
		{pipeline.TaskWebShop, "click", `not json`, true, "not a JSON object"},
	} {
		if _, err := tool.CommandText(c.task, c.name, c.args, c.thoughts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CommandText(%s, %s, %s) = %v, want %q", c.task, c.name, c.args, err, c.want)
		}
	}
	if tool.ValidFor(pipeline.TaskWebShop, "take") || !tool.ValidFor(pipeline.TaskHotpotQA, "search") {
		t.Error("ValidFor mixes the tasks' action sets")
	}
	if n := len(tool.Defs(pipeline.TaskALFWorld)); n != 14 {
		t.Errorf("ALFWorld has %d tools, want its 13 commands and think", n)
	}
}
