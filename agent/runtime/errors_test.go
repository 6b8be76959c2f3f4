package runtime

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRuntimeError(t *testing.T) {
	grpcErr := status.Error(codes.Unknown, `failed to get sandbox runtime: no runtime for "nope" is configured`)
	own := errors.New(`RuntimeHandler "nope" not supported`)
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("cri: RunPodSandbox ns/web: %w", grpcErr), `rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nope" is configured`},
		{grpcErr, grpcErr.Error()},
		{fmt.Errorf("run pod sandbox web: %w", own), `run pod sandbox web: RuntimeHandler "nope" not supported`},
	} {
		if got := RuntimeError(c.err).Error(); got != c.want {
			t.Errorf("RuntimeError(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
