package notify_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// smtpServer starts aiosmtpd (Debian's python3-aiosmtpd), which prints
// every message it receives, and returns its address and its output.
func smtpServer(t *testing.T) (string, *syncBuffer) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import aiosmtpd").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-aiosmtpd is not installed (.ci/run installs it)")
		}
		t.Skip("python3-aiosmtpd is not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	out := &syncBuffer{}
	cmd := exec.Command("/usr/bin/python3", "-u", "-m", "aiosmtpd", "-n", "-l", addr)
	cmd.Dir = filepath.Clean(t.TempDir())
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("aiosmtpd did not listen: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An email channel's notification reaches an SMTP server (aiosmtpd) with
// its event and delivery id, the JSON body intact.
func TestEmailChannelOverSMTP(t *testing.T) {
	addr, out := smtpServer(t)
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := rootCtx()
		c := newClock()
		e := newEnv(t, st, c)
		mailer, err := notify.ParseSMTP("smtp://"+addr, "", "", "alerts@tifeeds.example")
		if err != nil {
			t.Fatal(err)
		}
		secrets, _ := store.NewSecrets(testKey)
		w := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: secrets, SMTP: mailer, Now: c.Now})
		ch, _, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelEmail, Name: "soc mail",
			Target: []string{"soc@example.org", "Night Shift <night@example.org>"}, Events: []string{store.EventFeedHealth}})
		if err != nil {
			t.Fatal(err)
		}
		if ch.Target != "soc@example.org,night@example.org" {
			t.Fatalf("recipients = %q", ch.Target)
		}
		if err := e.channels.Test(ctx, ch.ID); err != nil {
			t.Fatal(err)
		}
		if n, err := w.DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("claimed %d, %v", n, err)
		}
		log, _ := e.channels.Deliveries(ctx, ch.ID, 10, 0)
		if len(log) != 1 || log[0].Status != store.DeliveryDelivered {
			t.Fatalf("delivery log = %+v", log)
		}
		id := log[0].DeliveryID
		// aiosmtpd has printed the message by the time it answered DATA.
		text := out.String()
		if !strings.Contains(text, "X-Tifeeds-Delivery: "+id) || !strings.Contains(text, "X-Tifeeds-Event: TEST") ||
			!strings.Contains(text, "night@example.org") {
			t.Fatalf("aiosmtpd printed:\n%s", text)
		}
		msg := text[strings.Index(text, "X-Tifeeds-Delivery: "+id):]
		var b64 strings.Builder
		for _, line := range strings.Split(msg, "\n")[1:] {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "----") {
				break
			}
			if line != "" && !strings.Contains(line, ":") {
				b64.WriteString(line)
			}
		}
		body, err := base64.StdEncoding.DecodeString(b64.String())
		if err != nil || !strings.Contains(string(body), `"delivery":"`+id+`"`) {
			t.Fatalf("body %q (%v)", body, err)
		}
	})
	// The password is never in an error.
	if _, err := notify.ParseSMTP("smtp://user:hunter2@", "", "", ""); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
	if _, err := notify.ParseSMTP("http://mail.example.org", "", "", ""); err == nil {
		t.Fatal("an http URL was taken for SMTP")
	}
	_ = context.Background
}
