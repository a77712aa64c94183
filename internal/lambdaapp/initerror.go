package lambdaapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// InitErrorType is the error type reported for a failed cold start.
const InitErrorType = "Runtime.ConfigError"

// ReportInitError tells the Lambda Runtime API at api (the value of
// AWS_LAMBDA_RUNTIME_API) that initialisation failed with err, as the
// Runtime API documents: POST /2018-06-01/runtime/init/error with the
// error type header and a JSON body {errorMessage, errorType, stackTrace}.
// The caller then exits. Outside Lambda (api empty) it does nothing.
func ReportInitError(ctx context.Context, api string, err error) error {
	if api == "" {
		return nil
	}
	body, _ := json.Marshal(struct {
		ErrorMessage string   `json:"errorMessage"`
		ErrorType    string   `json:"errorType"`
		StackTrace   []string `json:"stackTrace"`
	}{err.Error(), InitErrorType, []string{}})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := "http://" + api + "/2018-06-01/runtime/init/error"
	req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if rerr != nil {
		return fmt.Errorf("report init error: %w", rerr)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Lambda-Runtime-Function-Error-Type", InitErrorType)
	// The Runtime API is link-local: never through a proxy.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, rerr := client.Do(req)
	if rerr != nil {
		return fmt.Errorf("report init error: %w", rerr)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("report init error: %s answered %s", url, resp.Status)
	}
	return nil
}
