// Package eaitest runs a real eai-gpu server for the SDK's tests, and a fault-injecting proxy in front of it.
// It is internal to the module: not part of the SDK's API.
package eaitest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// AdminKey is the bootstrap platform_admin key of the servers started by Start.
const AdminKey = "eai_live_go_sdk_test_admin_key_0123456789"

// RepoRoot returns the eai-gpu repository root (the module lives in <repo>/sdks/go).
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	// <repo>/sdks/go/internal/eaitest/server.go
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", ".."))
}

// ModuleRoot returns the SDK module's directory (<repo>/sdks/go).
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary finds the eai-gpu server binary: $EAI_GPU_BIN, else <repo>/target/debug/eai-gpu, else eai-gpu on
// PATH. It is an error (never a skip) when none exists.
func Binary() (string, error) {
	if v := os.Getenv("EAI_GPU_BIN"); v != "" {
		st, err := os.Stat(v)
		if err != nil {
			return "", fmt.Errorf("EAI_GPU_BIN=%s: %w", v, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("EAI_GPU_BIN=%s is not an executable file", v)
		}
		return v, nil
	}
	tried := []string{"$EAI_GPU_BIN (unset)"}
	local := filepath.Join(RepoRoot(), "target", "debug", "eai-gpu")
	if st, err := os.Stat(local); err == nil && !st.IsDir() {
		return local, nil
	}
	tried = append(tried, local)
	if p, err := exec.LookPath("eai-gpu"); err == nil {
		return p, nil
	}
	tried = append(tried, "eai-gpu on $PATH")
	return "", fmt.Errorf("no eai-gpu server binary: tried %s; build it (cargo build -p eai-gpu) or set EAI_GPU_BIN",
		strings.Join(tried, ", "))
}

// Server is a running `eai-gpu serve` on a fresh SQLite data dir.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:PORT).
	URL string
	// AdminKey is its bootstrap platform_admin key.
	AdminKey string
	// Env are the extra environment variables it was started with.
	Env map[string]string

	dir    string
	cmd    *exec.Cmd
	log    *syncBuffer
	exited chan struct{}
	once   sync.Once
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends to the buffer.
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns the buffer.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs `eai-gpu serve --listen 127.0.0.1:<free port>` with EAI_BOOTSTRAP_ADMIN_KEY=AdminKey,
// EAI_DATA_DIR=<new temp dir> and env (EAI_MAX_BATCH, EAI_RATE_LIMIT_PER_KEY, …), no other EAI_* variable
// of the caller's environment, and waits until GET /readyz answers 200.
func Start(env map[string]string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for try := 0; try < 3; try++ {
		s, err := start(bin, env)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func start(bin string, env map[string]string) (*Server, error) {
	dir, err := os.MkdirTemp("", "eai-go-sdk-test-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EAI_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "EAI_BOOTSTRAP_ADMIN_KEY="+AdminKey, "EAI_DATA_DIR="+dir, "NO_COLOR=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	bindToParent(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	s := &Server{
		URL:      fmt.Sprintf("http://127.0.0.1:%d", port),
		AdminKey: AdminKey,
		Env:      env,
		dir:      dir,
		cmd:      cmd,
		log:      logs,
		exited:   make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-s.exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("eai-gpu serve exited during startup: %s", s.LogTail(2000))
		default:
		}
		resp, err := hc.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("eai-gpu serve not ready after 30 s: %s", s.LogTail(2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LogTail returns the last n bytes of the server's output.
func (s *Server) LogTail(n int) string {
	out := s.log.String()
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// Stop terminates the server (SIGTERM, then SIGKILL after 5 s) and removes its data dir.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
		os.RemoveAll(s.dir)
	})
}
