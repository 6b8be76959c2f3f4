package flowcontrol

import (
	"math"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// The work estimator's constants, upstream's defaults
// (k8s.io/apiserver/pkg/util/flowcontrol/request/config.go) with the
// object-count estimate of lists: Kite's storage does not estimate object
// sizes, which upstream's size-based estimate (SizeBasedListCostEstimate)
// needs, so lists cost seats by their object count, at most 10, as
// upstream's estimator without that gate.
const (
	minimumSeats              = 1
	maximumListSeatsLimit     = 10
	maximumMutatingSeatsLimit = 10
	objectsPerSeat            = 100.0
	watchesPerSeat            = 10.0
	eventAdditionalDuration   = 5 * time.Millisecond
	// infiniteObjectCount stands for a count not known yet: such a list
	// costs the most seats (upstream's ObjectCountStaleErr).
	infiniteObjectCount = 1_000_000_000
	// levelMaxSeatsPercent is the share of a level's nominal seats one
	// request may take at most (upstream's priorityLevelMaxSeatsPercent).
	levelMaxSeatsPercent = 0.15
)

// workEstimate is what a request costs: seats, taken while it runs, and
// held additionalLatency longer once it is done (the watchers its write
// notifies). Upstream's WorkEstimate; seats is its MaxSeats() (the
// larger of the initial and the final seats), which upstream's queue set
// takes at dispatch and gives back after the additional latency.
type workEstimate struct {
	seats             int
	additionalLatency time.Duration
}

// ObjectCount is how many objects of a resource are stored, as the work
// estimator reads them: ok false when the resource is not counted (not
// served from a watch cache). A count not known yet (the cache still
// fills) is ok with count -1.
type ObjectCount func(group, resource string) (count int64, ok bool)

// estimateWork is upstream's work estimator (request/width.go,
// list_work_estimator.go, mutating_work_estimator.go) for a request of a
// level whose one request may take at most levelMaxSeats (0: no level
// limit): lists by the objects they read, writes by the watches they
// notify, every other request one seat.
func estimateWork(info *genericapirequest.RequestInfo, query url.Values, count ObjectCount, watches int, levelMaxSeats int) workEstimate {
	switch info.Verb {
	case "list", "watch": // watches too, as upstream with WatchList on (1.37's default)
		return workEstimate{seats: estimateList(info, query, count, levelMaxSeats)}
	case "create", "update", "patch", "delete":
		return estimateMutating(info, watches, levelMaxSeats)
	}
	return workEstimate{seats: minimumSeats}
}

// estimateList is upstream's listWorkEstimator with the object-count
// estimate, for a server whose every list is served from its cache. A watch that starts with the current objects (from
// resourceVersion "" or "0", or sendInitialEvents) costs what listing
// them from the cache costs; another watch one seat.
func estimateList(info *genericapirequest.RequestInfo, query url.Values, count ObjectCount, levelMaxSeats int) int {
	maxSeats := capSeats(levelMaxSeats, maximumListSeatsLimit)
	var opts metav1.ListOptions
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&query, &opts, nil); err != nil {
		return maxSeats // as upstream: an unreadable list may be large
	}
	watch := info.Verb == "watch"
	if watch {
		initialEvents := opts.SendInitialEvents != nil && *opts.SendInitialEvents
		if !initialEvents && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return minimumSeats
		}
	}
	stored, ok := count(info.APIGroup, info.Resource)
	if !ok {
		return minimumSeats // upstream's ObjectCountNotFoundErr
	}
	if stored < 0 {
		stored = infiniteObjectCount
	}
	// Kite's watch cache answers every list once it is ready (exact and
	// paginated ones too: storage/watchcache's list), so every list is
	// upstream's list from the cache, which looks at every object
	// whatever the limit; before the cache is ready the count is unknown
	// and the list costs the most.
	processed := stored
	if info.Name != "" { // a list of one object, by its name
		processed = 1
	}
	seats := int(math.Ceil(float64(processed) / objectsPerSeat))
	return min(max(seats, minimumSeats), maxSeats)
}

// estimateMutating is upstream's mutatingWorkEstimator: a write notifies
// the watches of its resource; past watchesPerSeat of them it holds
// ceil(watches / watchesPerSeat) seats (at most the limit) for the
// eventAdditionalDuration that many notifications take, spread over
// those seats.
func estimateMutating(info *genericapirequest.RequestInfo, watches int, levelMaxSeats int) workEstimate {
	if info.Resource == "serviceaccounts" && info.Subresource == "token" {
		return workEstimate{seats: minimumSeats} // notifies no watcher
	}
	if watches < watchesPerSeat {
		return workEstimate{seats: 1}
	}
	maxSeats := capSeats(levelMaxSeats, maximumMutatingSeatsLimit)
	finalSeats := int(math.Ceil(float64(watches) / watchesPerSeat))
	// The work is finalSeats × eventAdditionalDuration seat-seconds,
	// whatever the seats it is spread over (upstream's SeatSeconds).
	work := float64(finalSeats) * eventAdditionalDuration.Seconds()
	finalSeats = min(finalSeats, maxSeats)
	latency := time.Duration(work / float64(finalSeats) * float64(time.Second))
	return workEstimate{seats: max(1, finalSeats), additionalLatency: latency}
}

// capSeats is the most seats a request of a level may take: the level's
// own maximum, within the estimator's limit.
func capSeats(levelMaxSeats, limit int) int {
	if levelMaxSeats <= 0 || levelMaxSeats > limit {
		return limit
	}
	return levelMaxSeats
}

// maxSeats is the most seats one request of a queuing level may take:
// max(1, min(ceil(15% of nominal), nominal / handSize)), upstream's
// MaxSeatsTracker; 0 (no level limit) for other levels.
func (c *levelConfig) maxSeats() int {
	if c.reject || c.exempt || c.handSize <= 0 {
		return 0
	}
	return int(math.Max(1, math.Min(math.Ceil(float64(c.nominal)*levelMaxSeatsPercent), float64(c.nominal/c.handSize))))
}
