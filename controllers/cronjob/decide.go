package cronjob

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// tooManyMissed is how many missed start times make upstream warn.
const tooManyMissed = 100

// Schedule parses a CronJob's schedule (standard cron syntax, the @hourly
// style macros and @every) in its timeZone, or the controller's local
// zone without one.
func Schedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	spec := cj.Spec.Schedule
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			return nil, fmt.Errorf("unknown time zone %s: %w", *cj.Spec.TimeZone, err)
		}
		spec = "TZ=" + *cj.Spec.TimeZone + " " + spec
	}
	return cron.ParseStandard(spec)
}

// MostRecent is upstream's mostRecentScheduleTime: the latest start time
// not yet acted on at now, counting from lastScheduleTime (or creation)
// but no earlier than startingDeadlineSeconds ago, or nil if none has
// passed; and how many were missed.
func MostRecent(cj *batchv1.CronJob, sched cron.Schedule, now time.Time) (*time.Time, int) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if deadline := now.Add(-time.Duration(*d) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	var last *time.Time
	missed := 0
	for t := sched.Next(earliest); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		tt := t
		last = &tt
		missed++
		if missed > 100000 {
			break // the count is what matters past this point
		}
	}
	return last, missed
}

// JobName is the name of the Job for a scheduled time: the CronJob's name
// and the time in minutes since the epoch, as upstream.
func JobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}
