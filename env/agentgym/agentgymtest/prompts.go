package agentgymtest

import (
	"fmt"
	"strings"
)

// ALFWorldPrompts is a prompt file in the shape of the paper's alfworld_3prompts.json
// (keys "<react|act>_<type>_<0|1>", each one solved game as text: the room and task,
// then "> action" lines with the observations below them), written here about an
// invented household, for tests that must not read the paper's file.
func ALFWorldPrompts() map[string]string {
	types := []struct{ name, object, place, verb string }{
		{"put", "cup", "shelf", ""},
		{"clean", "spoon", "drawer", "clean"},
		{"heat", "bun", "plate", "heat"},
		{"cool", "pear", "bowl", "cool"},
		{"examine", "coin", "lamp", "examine"},
		{"puttwo", "sock", "basket", ""},
	}
	out := map[string]string{}
	for _, t := range types {
		for n := range 2 {
			obj := fmt.Sprintf("%s %d", t.object, n+1)
			var b strings.Builder
			fmt.Fprintf(&b, "You are in the middle of a room. Looking quickly around you, you see a table %d, and a %s 1.\n", n+1, t.place)
			fmt.Fprintf(&b, "Your task is to: put a %s in %s.\n", t.object, t.place)
			react := b.String()
			act := b.String()
			step := func(action, obs string, thought bool) {
				line := "> " + action + "\n" + obs + "\n"
				react += line
				if !thought {
					act += line
				}
			}
			step(fmt.Sprintf("think: I need to find a %s and bring it to the %s.", t.object, t.place), "OK.", true)
			step(fmt.Sprintf("go to table %d", n+1), fmt.Sprintf("On the table %d, you see a %s.", n+1, obj), false)
			step(fmt.Sprintf("take %s from table %d", obj, n+1), fmt.Sprintf("You pick up the %s from the table %d.", obj, n+1), false)
			if t.verb != "" && t.verb != "examine" {
				step(fmt.Sprintf("%s %s with sinkbasin 1", t.verb, obj), fmt.Sprintf("You %s the %s using the sinkbasin 1.", t.verb, obj), false)
			}
			step(fmt.Sprintf("go to %s 1", t.place), fmt.Sprintf("On the %s 1, you see nothing.", t.place), false)
			step(fmt.Sprintf("put %s in/on %s 1", obj, t.place), fmt.Sprintf("You put the %s in/on the %s 1.", obj, t.place), false)
			out[fmt.Sprintf("react_%s_%d", t.name, n)] = react
			out[fmt.Sprintf("act_%s_%d", t.name, n)] = act
		}
	}
	return out
}

// WebShopPrompts is a prompt file in the shape of the WebShop notebook's prompts
// ("webshop_react_1", "webshop_act_1": one solved purchase in the notebook's layout),
// written here about an invented shop.
func WebShopPrompts() map[string]string {
	head := "Webshop \nInstruction:  \ni want a blue enamel mug for camping, and price lower than 20.00 dollars \n[Search]  \n\n"
	search := "Action: search[blue enamel camping mug]\nObservation: \n[Back to Search] \nPage 1 (Total results: 2) \n[Next >] \n[B0MUG00001] \nTrailhead Enamel Mug 350 ml \n$12.00 \n[B0MUG00002] \nPorcelain Tea Mug \n$9.00  \n\n"
	think1 := "Action: think[B0MUG00001 is an enamel camping mug under 20 dollars.]\nObservation: OK.\n\n"
	click := "Action: click[B0MUG00001]\nObservation: \n[Back to Search] \n[< Prev] \ncolor [blue][red]\nTrailhead Enamel Mug 350 ml \nPrice: $12.00 \nRating: N.A. \n[Description] \n[Features] \n[Reviews] \n[Buy Now]  \n\n"
	think2 := "Action: think[It has the color blue, which the instruction asks for.]\nObservation: OK.\n\n"
	option := "Action: click[blue]\nObservation: You have clicked blue. \n\n"
	buy := "Action: click[Buy Now]\n"
	return map[string]string{
		"webshop_react_1": head + search + think1 + click + think2 + option + buy,
		"webshop_act_1":   head + search + click + option + buy,
	}
}
