// A receiver on Go's net/http alone. Run: WEBHOOK_SECRET=whsec_... PORT=4000 go run receiver.go
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const toleranceSeconds = 5 * 60

// verifyWebhook checks a delivery (Standard Webhooks) over its raw body, exactly as it arrived.
func verifyWebhook(rawBody []byte, header http.Header, secret string) bool {
	id := header.Get("webhook-id")
	timestamp := header.Get("webhook-timestamp")
	signatures := header.Get("webhook-signature")
	if id == "" || timestamp == "" || signatures == "" {
		return false
	}
	// A delivery older (or newer) than five minutes is refused: a captured one cannot be replayed later.
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || math.Abs(float64(time.Now().Unix()-seconds)) > toleranceSeconds {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(rawBody)
	expected := mac.Sum(nil)
	// During a secret rotation the header holds two signatures ("v1,<new> v1,<old>"): one is enough.
	for _, entry := range strings.Split(signatures, " ") {
		version, signature, found := strings.Cut(entry, ",")
		if !found || version != "v1" {
			continue
		}
		given, err := base64.StdEncoding.DecodeString(signature)
		if err == nil && hmac.Equal(given, expected) {
			return true
		}
	}
	return false
}

func main() {
	secret := os.Getenv("WEBHOOK_SECRET")
	http.HandleFunc("/webhooks/intake", func(w http.ResponseWriter, r *http.Request) {
		rawBody, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil || !verifyWebhook(rawBody, r.Header, secret) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var event struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(rawBody, &event); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		// Delivery is at least once: the same event.ID may come again; handle it once.
		fmt.Println("verified", event.ID, event.Type)
		w.WriteHeader(http.StatusNoContent)
	})
	port := os.Getenv("PORT")
	if port == "" {
		port = "4000"
	}
	log.Fatal(http.ListenAndServe(":"+port, nil))
}
