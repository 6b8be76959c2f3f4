package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestMostRecent(t *testing.T) {
	created := time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)
	tests := []struct {
		name      string
		schedule  string
		last      *time.Time
		deadline  *int64
		now       time.Time
		want      *time.Time
		wantCount int
	}{
		{"nothing due yet", "*/5 * * * *", nil, nil, created.Add(time.Minute), nil, 0},
		{"one due", "*/5 * * * *", nil, nil, created.Add(5 * time.Minute), ptr.To(time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)), 1},
		{"three missed: the latest", "@hourly", nil, nil, created.Add(3*time.Hour + time.Minute), ptr.To(time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)), 3},
		{"after the last schedule", "*/5 * * * *", ptr.To(time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)), nil, created.Add(7 * time.Minute), nil, 0},
		{"starting deadline hides older times", "*/5 * * * *", nil, ptr.To[int64](60), created.Add(13 * time.Minute), nil, 0},
		{"within the starting deadline", "*/5 * * * *", nil, ptr.To[int64](300), created.Add(13 * time.Minute), ptr.To(time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				Spec: batchv1.CronJobSpec{Schedule: tc.schedule, TimeZone: ptr.To("UTC"), StartingDeadlineSeconds: tc.deadline}}
			if tc.last != nil {
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(*tc.last))
			}
			sched, err := Schedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			got, n := MostRecent(cj, sched, tc.now)
			if (got == nil) != (tc.want == nil) || (got != nil && !got.Equal(*tc.want)) || n != tc.wantCount {
				t.Fatalf("= %v, %d; want %v, %d", got, n, tc.want, tc.wantCount)
			}
		})
	}
}

func TestScheduleTimeZone(t *testing.T) {
	cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "0 9 * * *", TimeZone: ptr.To("Asia/Tokyo")}}
	sched, err := Schedule(cj)
	if err != nil {
		t.Fatal(err)
	}
	next := sched.Next(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if !next.Equal(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)) { // 09:00 JST is 00:00 UTC
		t.Errorf("next = %v", next.UTC())
	}
	if _, err := Schedule(&batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "@daily", TimeZone: ptr.To("Mars/Olympus")}}); err == nil {
		t.Error("an unknown time zone parsed")
	}
	if got := JobName(&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, time.Unix(600, 0)); got != "c-10" {
		t.Errorf("JobName = %q", got)
	}
}
