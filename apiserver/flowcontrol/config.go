package flowcontrol

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/kite-project/kite/apis/flowcontrol/defaults"
)

// levelConfig is what a priority level's object says, in seats.
type levelConfig struct {
	pl     *flowcontrolv1.PriorityLevelConfiguration
	exempt bool
	// nominal is the level's share of the server's seats; lendable of
	// them may be lent to other levels, and it may borrow up to
	// borrowing more (upstream's nominalCL, lendableCL, borrowingCL).
	nominal, lendable, borrowing int
	// reject is limitResponse Reject: no queues.
	reject                             bool
	queues, handSize, queueLengthLimit int
}

// guaranteed is the part of the nominal seats never lent (upstream's
// minCL).
func (c *levelConfig) guaranteed() int { return c.nominal - c.lendable }

// limit is the most seats the level may use, borrowing (upstream's
// maxCL).
func (c *levelConfig) limit() int { return c.nominal + c.borrowing }

// sameQueues reports whether b queues as a does.
func (c *levelConfig) sameQueues(b *levelConfig) bool {
	return c.reject == b.reject && c.queues == b.queues && c.handSize == b.handSize && c.queueLengthLimit == b.queueLengthLimit
}

// config is one digested configuration: the FlowSchemas in matching order
// (those whose level exists), the levels, and which schemas dangle.
type config struct {
	flowSchemas []*flowcontrolv1.FlowSchema
	levels      map[string]*levelConfig
	// dangling names the FlowSchemas whose priority level does not exist.
	dangling map[string]bool
}

// digest builds the configuration of the given objects for serverCL seats,
// as upstream's config controller (apf_controller.go): FlowSchemas sorted
// by matchingPrecedence then name, those of a missing level left out (and
// marked dangling), the mandatory exempt and catch-all objects imagined
// when missing, and each level's seats its share of serverCL:
// ceil(serverCL × shares / Σ shares), of which round(nominal ×
// lendablePercent/100) lendable and round(nominal ×
// borrowingLimitPercent/100) borrowable (serverCL when unbounded). Objects
// are not modified; levels of a broken spec are left out.
func digest(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration, serverCL int) (*config, error) {
	c := &config{levels: map[string]*levelConfig{}, dangling: map[string]bool{}}
	var errs []error
	var shareSum float64
	shares := map[string]int32{}
	add := func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		lc, share, err := levelOf(pl)
		if err != nil {
			errs = append(errs, err)
			return
		}
		c.levels[pl.Name] = lc
		shares[pl.Name] = share
		shareSum += float64(share)
	}
	for _, pl := range pls {
		add(pl)
	}
	for _, m := range bootstrap.MandatoryPriorityLevelConfigurations {
		if c.levels[m.Name] == nil {
			add(m)
		}
	}
	for name, lc := range c.levels {
		if shareSum > 0 {
			lc.nominal = int(math.Ceil(float64(serverCL) * float64(shares[name]) / shareSum))
		}
		if p := percents(lc.pl).lendable; p != nil {
			lc.lendable = int(math.Round(float64(lc.nominal) * float64(*p) / 100))
		}
		if p := percents(lc.pl).borrowing; p != nil {
			lc.borrowing = int(math.Round(float64(lc.nominal) * float64(*p) / 100))
		} else {
			lc.borrowing = serverCL
		}
	}
	var haveExempt, haveCatchAll bool
	for _, fs := range fss {
		if c.levels[fs.Spec.PriorityLevelConfiguration.Name] == nil {
			c.dangling[fs.Name] = true
			continue
		}
		c.flowSchemas = append(c.flowSchemas, fs)
		haveExempt = haveExempt || fs.Name == flowcontrolv1.FlowSchemaNameExempt
		haveCatchAll = haveCatchAll || fs.Name == flowcontrolv1.FlowSchemaNameCatchAll
	}
	slices.SortFunc(c.flowSchemas, func(a, b *flowcontrolv1.FlowSchema) int {
		return cmp.Or(cmp.Compare(a.Spec.MatchingPrecedence, b.Spec.MatchingPrecedence), cmp.Compare(a.Name, b.Name))
	})
	if !haveExempt {
		c.flowSchemas = append([]*flowcontrolv1.FlowSchema{bootstrap.MandatoryFlowSchemaExempt}, c.flowSchemas...)
	}
	if !haveCatchAll {
		c.flowSchemas = append(c.flowSchemas, bootstrap.MandatoryFlowSchemaCatchAll)
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("priority levels left out: %v", errs)
	}
	return c, nil
}

type levelPercents struct{ lendable, borrowing *int32 }

func percents(pl *flowcontrolv1.PriorityLevelConfiguration) levelPercents {
	if l := pl.Spec.Limited; l != nil {
		return levelPercents{l.LendablePercent, l.BorrowingLimitPercent}
	}
	if e := pl.Spec.Exempt; e != nil {
		// The exempt level may lend, never borrows (it needs not).
		zero := int32(0)
		return levelPercents{e.LendablePercent, &zero}
	}
	return levelPercents{}
}

// levelOf reads a level's object (defaulted on a copy: the mandatory
// objects imagined here come undefaulted) as upstream's
// queueSetCompleterForPL checks it.
func levelOf(pl *flowcontrolv1.PriorityLevelConfiguration) (*levelConfig, int32, error) {
	spec := pl.Spec
	if (spec.Type == flowcontrolv1.PriorityLevelEnablementLimited) != (spec.Limited != nil) ||
		(spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) != (spec.Exempt != nil) {
		return nil, 0, fmt.Errorf("priority level %q: broken union structure at the top", pl.Name)
	}
	if (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) != (pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) {
		return nil, 0, fmt.Errorf("priority level %q: non-alignment between name and type", pl.Name)
	}
	pl = pl.DeepCopy()
	defaults.PriorityLevelConfiguration(pl)
	lc := &levelConfig{pl: pl}
	if e := pl.Spec.Exempt; e != nil {
		lc.exempt = true
		return lc, *e.NominalConcurrencyShares, nil
	}
	l := pl.Spec.Limited
	q := l.LimitResponse.Queuing
	if (l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeReject) != (q == nil) {
		return nil, 0, fmt.Errorf("priority level %q: broken union structure for limit response", pl.Name)
	}
	if q == nil {
		lc.reject = true
	} else {
		lc.queues, lc.handSize, lc.queueLengthLimit = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
		if lc.queues < 1 || lc.handSize < 1 || lc.handSize > lc.queues || lc.queueLengthLimit < 1 {
			return nil, 0, fmt.Errorf("priority level %q: queuing %+v is invalid", pl.Name, *q)
		}
	}
	return lc, *l.NominalConcurrencyShares, nil
}

// classify finds the first FlowSchema matching d and its level. The
// catch-all schema (always present) matches every request.
func (c *config) classify(d Digest) (*flowcontrolv1.FlowSchema, *levelConfig) {
	for _, fs := range c.flowSchemas {
		if matchesFlowSchema(d, fs) {
			return fs, c.levels[fs.Spec.PriorityLevelConfiguration.Name]
		}
	}
	// Unreachable with the catch-all schema; a request is never lost.
	fs := bootstrap.MandatoryFlowSchemaCatchAll
	return fs, c.levels[fs.Spec.PriorityLevelConfiguration.Name]
}
