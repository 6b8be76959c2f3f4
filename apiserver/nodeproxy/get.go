package nodeproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// maxAgentBody bounds what Get reads of an agent's answer.
const maxAgentBody = 64 << 20

// Get reads path (e.g. "/stats/summary") from node nodeName's agent with
// the API server's client certificate, and returns the body of a 200.
func (p *Proxy) Get(ctx context.Context, nodeName, path string) ([]byte, error) {
	base, err := p.nodeURL(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	base.Path = path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.transportFor(base).RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("node %s: GET %s: %w", nodeName, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAgentBody))
	if err != nil {
		return nil, fmt.Errorf("node %s: GET %s: %w", nodeName, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %s: GET %s: %s: %.200s", nodeName, path, resp.Status, body)
	}
	return body, nil
}
