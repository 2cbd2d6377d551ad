package crisis_test

import (
	"testing"

	"github.com/companionhq/companion/internal/safety/crisis"
)

// TestLanguages: the core phrases of other languages trip as their kind,
// with the cue "language" when no English rule reads them; their
// everyday idioms of exaggeration and their negations do not.
func TestLanguages(t *testing.T) {
	const (
		si = crisis.KindSuicidalIdeation
		sh = crisis.KindSelfHarm
	)
	type c struct {
		text string
		kind string
	}
	for _, lang := range []struct {
		name  string
		cases []c
	}{
		{"spanish", []c{
			{"quiero morirme", si},
			{"me quiero matar", si},
			{"Ya no quiero vivir, estoy muy cansada", si},
			{"esta noche voy a acabar con todo", si},
			{"escribí mi carta de despedida", si},
			{"me corté otra vez los brazos anoche", sh},
			{"me muero de risa con este video", ""},
			{"me mata el calor hoy", ""},
			{"quiero morirme de risa jajaja", ""},
			{"me corto el pelo mañana", ""},
		}},
		{"portuguese", []c{
			{"eu quero morrer", si},
			{"não quero mais viver", si},
			{"vou me matar hoje", si},
			{"estou me cortando de novo", sh},
			{"morri de rir com esse vídeo", ""},
			{"quero morrer de rir kkkk", ""},
			{"não quero morrer", ""},
		}},
		{"french", []c{
			{"je veux mourir", si},
			{"j'ai envie de mourir", si},
			{"Je ne veux plus vivre", si},
			{"je pense au suicide tous les jours", si},
			{"je me scarifie depuis des mois", sh},
			{"mort de rire cette vidéo", ""},
			{"je meurs de faim, on mange quoi ?", ""},
			{"je ne veux pas mourir", ""},
		}},
		{"german", []c{
			{"ich will nicht mehr leben", si},
			{"ich will sterben", si},
			{"Ich möchte sterben", si},
			{"ich ritze mich wieder", sh},
			{"ich sterbe vor Lachen", ""},
			{"bin todmüde nach der Arbeit", ""},
			{"ich will nicht sterben", ""},
		}},
		{"italian", []c{
			{"voglio morire", si},
			{"non voglio più vivere", si},
			{"voglio farla finita stasera", si},
			{"mi faccio del male di nuovo", sh},
			{"sto morendo dal ridere", ""},
			{"ti amo da morire", ""},
			{"muoio di fame", ""},
		}},
		{"dutch", []c{
			{"ik wil niet meer leven", si},
			{"ik wil dood", si},
			{"ik denk aan zelfmoord", si},
			{"ik snijd mezelf weer", sh},
			{"ik lach me dood", ""},
			{"ik ben doodmoe", ""},
		}},
		{"russian", []c{
			{"я не хочу жить", si},
			{"хочу умереть", si},
			{"Я хочу покончить с собой", si},
			{"я режу себя", sh},
			{"умираю со смеху", ""},
			{"я не хочу умереть", ""},
			{"убить время до вечера", ""},
		}},
		{"polish", []c{
			{"chcę umrzeć", si},
			{"nie chcę już żyć", si},
			{"chce sie zabic", si},
			{"znowu tnę się", sh},
			{"umieram ze śmiechu", ""},
			{"nie chcę umrzeć", ""},
		}},
		{"turkish", []c{
			{"ölmek istiyorum", si},
			{"artık yaşamak istemiyorum", si},
			{"intihar etmeyi düşünüyorum", si},
			{"kendime zarar veriyorum", sh},
			{"gülmekten öldüm", ""},
			{"ölmek istemiyorum", ""},
			{"açlıktan ölüyorum", ""},
		}},
		{"hindi", []c{
			{"mujhe marna hai", si},
			{"jeene ka mann nahi karta", si},
			{"main marna chahta hoon", si},
			{"मैं मरना चाहता हूँ", si},
			{"main khud ko hurt karta hoon", sh},
			{"hass hass ke mar gaya", ""},
			{"bhook se mar raha hoon yaar", ""},
			{"main nahi marna chahta", ""},
		}},
		{"japanese", []c{
			{"死にたい", si},
			{"もう生きていたくない", si},
			{"消えたい。誰にも会いたくない", si},
			{"またリストカットしてしまった", sh},
			{"このラーメン死ぬほど美味しい", ""},
			{"死ぬほど疲れた", ""},
			{"恥ずかしくて死にたい笑", ""},
		}},
		{"chinese", []c{
			{"我想死", si},
			{"不想活了", si},
			{"我真的活不下去了", si},
			{"我又自残了", sh},
			{"笑死我了", ""},
			{"今天累死了", ""},
			{"想死你了", ""},
			{"我不想死", ""},
		}},
		{"korean", []c{
			{"죽고 싶어", si},
			{"죽고싶다 진짜", si},
			{"더 이상 살기 싫어", si},
			{"또 자해했어", sh},
			{"배고파 죽겠어", ""},
			{"웃겨 죽겠다 ㅋㅋ", ""},
			{"안 죽고 싶어", ""},
		}},
		{"arabic", []c{
			{"أريد أن أموت", si},
			{"لا أريد أن أعيش", si},
			{"أفكر في الانتحار", si},
			{"أؤذي نفسي كل ليلة", sh},
			{"ميت من الضحك", ""},
			{"أموت من الجوع", ""},
			{"لا أريد أن أموت", ""},
		}},
	} {
		t.Run(lang.name, func(t *testing.T) {
			d := crisis.New()
			for _, c := range lang.cases {
				f := d.Detect(c.text)
				if f.Kind != c.kind {
					t.Errorf("Detect(%q) = %+v, want kind %q", c.text, f, c.kind)
				}
			}
		})
	}
}

// TestLanguageCue: a phrase no English rule reads is named by the cue
// "language", never by the user's words.
func TestLanguageCue(t *testing.T) {
	d := crisis.New()
	for _, text := range []string{"ich will sterben", "死にたい", "хочу умереть", "죽고 싶어"} {
		if f := d.Detect(text); f.Cue != "language" {
			t.Errorf("Detect(%q) = %+v, want cue language", text, f)
		}
	}
}
