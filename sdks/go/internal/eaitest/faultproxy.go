package eaitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// FaultProxy is scripts/sdk/fault_proxy.py (the four SDKs' one fault proxy) running in front of a server.
type FaultProxy struct {
	// URL is the proxy's base URL (http://127.0.0.1:PORT).
	URL string
	cmd *exec.Cmd
	log *syncBuffer
}

// ProxyEntry is one request the proxy saw (GET /__proxy/log).
type ProxyEntry struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	At      float64           `json:"at"`
	Headers map[string]string `json:"headers"`
	Records *int              `json:"records"`
	Fault   json.RawMessage   `json:"fault"`
	Status  *int              `json:"status"`
}

// StartFaultProxy runs `python3 scripts/sdk/fault_proxy.py --upstream upstream --port 0` and waits for its
// "listening on" line.
func StartFaultProxy(upstream string) (*FaultProxy, error) {
	script := filepath.Join(RepoRoot(), "scripts", "sdk", "fault_proxy.py")
	cmd := exec.Command("python3", script, "--upstream", upstream, "--port", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	bindToParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", script, err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "fault_proxy listening on ") {
				lines <- strings.TrimPrefix(line, "fault_proxy listening on ")
			}
			_, _ = logs.Write([]byte(line + "\n"))
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		if ok {
			return &FaultProxy{URL: strings.TrimSpace(u), cmd: cmd, log: logs}, nil
		}
	case <-time.After(20 * time.Second):
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("%s did not say where it listens: %s", script, logs.String())
}

// Stop kills the proxy (by its own pid) and waits for it.
func (p *FaultProxy) Stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func (p *FaultProxy) control(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, p.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fault proxy %s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Queue replaces the queue of faults (one per next request, in order) and clears the log.
func (p *FaultProxy) Queue(faults []json.RawMessage) error {
	if faults == nil {
		faults = []json.RawMessage{}
	}
	return p.control(http.MethodPost, "/__proxy/faults", map[string]any{"faults": faults}, nil)
}

// Log returns the requests the proxy saw since the last Queue, and how many faults are left.
func (p *FaultProxy) Log() ([]ProxyEntry, int, error) {
	var out struct {
		Requests   []ProxyEntry `json:"requests"`
		FaultsLeft int          `json:"faults_left"`
	}
	err := p.control(http.MethodGet, "/__proxy/log", nil, &out)
	return out.Requests, out.FaultsLeft, err
}
