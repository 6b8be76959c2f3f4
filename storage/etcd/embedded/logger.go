package embedded

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogger is the zap logger handed to etcd. Its level can be raised at
// run time, and a Fatal inside etcd does not exit the process.
//
// etcd logs at error level on an ordinary shutdown ("mux: server closed",
// "use of closed network connection") and logs several error lines before it
// gives up on a bad data directory. Neither should reach a user who gets one
// clear error from Start, so Start and Close silence etcd while they run.
type etcdLogger struct {
	logger *zap.Logger
	level  zap.AtomicLevel
	// want is the level asked for in Options, restored once etcd is ready.
	want zapcore.Level

	// fatal receives the first Fatal message etcd logs. etcd calls Fatal
	// where it cannot go on (an unreadable WAL, say); the default hook
	// would os.Exit the whole process from a library goroutine.
	fatal     chan error
	fatalOnce sync.Once
}

func newEtcdLogger(level string) (*etcdLogger, error) {
	if level == "" {
		level = "error"
	}
	want, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: log level %q: %w", level, err)
	}
	l := &etcdLogger{
		level: zap.NewAtomicLevelAt(zapcore.FatalLevel + 1),
		want:  want,
		fatal: make(chan error, 1),
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = l.level
	cfg.Sampling = nil
	logger, err := cfg.Build(zap.WithFatalHook(fatalHook{l}), zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return startRaceFilter{c}
	}))
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: build logger: %w", err)
	}
	l.logger = logger.Named("etcd")
	return l, nil
}

// loud restores the level asked for in Options.
func (l *etcdLogger) loud() { l.level.SetLevel(l.want) }

// quiet drops every message; Fatal still reaches the hook.
func (l *etcdLogger) quiet() { l.level.SetLevel(zapcore.FatalLevel + 1) }

// fatalHook records a Fatal entry as an error and ends the calling
// goroutine, instead of ending the process.
type fatalHook struct{ l *etcdLogger }

func (h fatalHook) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	msg := ce.Message
	if e, ok := enc.Fields["error"]; ok {
		msg = fmt.Sprintf("%s: %v", msg, e)
	}
	h.l.fatalOnce.Do(func() { h.l.fatal <- fmt.Errorf("etcd: %s", msg) })
	runtime.Goexit()
}

// startRaceFilter drops the one error etcd logs when its storage version
// monitor runs before the first raft term reached the backend: with the
// short election of a single member (embedded.go) the cluster version is
// known within milliseconds and the monitor races the backend's first
// commit. etcd retries a moment later and succeeds, so the line only
// alarms users. Any other storage version failure still gets through.
type startRaceFilter struct{ zapcore.Core }

func (f startRaceFilter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message == "failed to update storage version" {
		return ce.AddCore(e, f) // decided in Write, which sees the fields
	}
	return f.Core.Check(e, ce)
}

func (f startRaceFilter) With(fields []zapcore.Field) zapcore.Core {
	return startRaceFilter{f.Core.With(fields)}
}

func (f startRaceFilter) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Message == "failed to update storage version" {
		for _, fd := range fields {
			if err, ok := fd.Interface.(error); ok && strings.Contains(err.Error(), "missing term information") {
				return nil
			}
		}
		if !f.Core.Enabled(e.Level) {
			return nil
		}
	}
	return f.Core.Write(e, fields)
}
