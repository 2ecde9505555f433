//go:build sluice_0_2

package task

// Outbound HTTP (contract 0.2, `-tags sluice_0_2`): a small blocking client on the
// generated `wasi:http/outgoing-handler` bindings (HTTPSend, HTTPGet, HTTPPost), its
// request, response and error types. The same behaviour as the C SDK's sluice_http.h.

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	types "sluice.invalid/task/bindings/v0.2/imports/wasi_http_types"
	streams "sluice.invalid/task/bindings/v0.2/imports/wasi_io_streams"
)

// Header is one request or response header. Response names are lowercase.
type Header struct {
	Name  string
	Value string
}

// HTTPRequest is one outbound request.
type HTTPRequest struct {
	Method  string // "GET", "POST", ...; "" is GET
	URL     string // absolute http:// or https:// URL (a #fragment is dropped)
	Headers []Header
	// Body is sent with its content-length (unless Headers has one), never chunked, so the
	// host can refuse one over its cap before connecting.
	Body []byte
	// Timeout bounds connecting, the first byte and the time between bytes; 0 leaves the
	// host's caps (the attempt's timeout clamps them anyway).
	Timeout time.Duration
}

// HTTPResponse is a whole response: redirects are returned, never followed.
type HTTPResponse struct {
	Status  int
	Headers []Header
	Body    []byte
}

// Header returns the first value of the header name (case-insensitive).
func (r *HTTPResponse) Header(name string) (string, bool) {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// HTTPError is a request the host refused or that failed. Code is the `wasi:http`
// error-code case: `HTTP-request-denied` (not on the job type's allow list, no grant, the
// attempt's request count reached), `destination-IP-prohibited` (a private or loopback
// address), `connection-timeout`, `HTTP-request-body-size`, ..., or `invalid-request` for a
// URL or header this client cannot send. A refusal will not change on a retry: return
// task.Fatal for those, the error itself (a retry) for what a retry can fix.
type HTTPError struct {
	Code    string
	Details string
}

func (e *HTTPError) Error() string {
	return "HTTP request failed: " + e.Code + " (" + e.Details + ")"
}

// HTTPGet sends `GET url`.
func HTTPGet(url string) (*HTTPResponse, error) {
	return HTTPSend(HTTPRequest{URL: url})
}

// HTTPPost sends `POST url` with body and its content type (e.g. "application/json").
func HTTPPost(url, contentType string, body []byte) (*HTTPResponse, error) {
	req := HTTPRequest{Method: "POST", URL: url, Body: body}
	if contentType != "" {
		req.Headers = []Header{{"content-type", contentType}}
	}
	return HTTPSend(req)
}

// errorCodes are the `error-code` cases in the WIT's order (their tags).
var errorCodes = [...]string{
	"DNS-timeout", "DNS-error", "destination-not-found", "destination-unavailable",
	"destination-IP-prohibited", "destination-IP-unroutable", "connection-refused",
	"connection-terminated", "connection-timeout", "connection-read-timeout",
	"connection-write-timeout", "connection-limit-reached", "TLS-protocol-error",
	"TLS-certificate-error", "TLS-alert-received", "HTTP-request-denied",
	"HTTP-request-length-required", "HTTP-request-body-size", "HTTP-request-method-invalid",
	"HTTP-request-URI-invalid", "HTTP-request-URI-too-long", "HTTP-request-header-section-size",
	"HTTP-request-header-size", "HTTP-request-trailer-section-size", "HTTP-request-trailer-size",
	"HTTP-response-incomplete", "HTTP-response-header-section-size", "HTTP-response-header-size",
	"HTTP-response-body-size", "HTTP-response-trailer-section-size", "HTTP-response-trailer-size",
	"HTTP-response-transfer-coding", "HTTP-response-content-coding", "HTTP-response-timeout",
	"HTTP-upgrade-failed", "HTTP-protocol-error", "loop-detected", "configuration-error",
	"internal-error",
}

func codeError(code types.ErrorCode) *HTTPError {
	name := "other"
	if int(code.Tag()) < len(errorCodes) {
		name = errorCodes[code.Tag()]
	}
	details := name
	if code.Tag() == types.ErrorCode_InternalError && code.InternalError().IsSome() {
		details = code.InternalError().Some()
	}
	return &HTTPError{Code: name, Details: details}
}

func streamError(e streams.StreamError) *HTTPError {
	if e.Tag() == streams.StreamError_Closed {
		return &HTTPError{Code: "connection-terminated", Details: "the stream closed"}
	}
	failed := e.LastOperationFailed()
	defer failed.Drop()
	if code := types.HttpErrorCode(failed); code.IsSome() {
		return codeError(code.Some())
	}
	return &HTTPError{Code: "internal-error", Details: failed.ToDebugString()}
}

func invalid(details string) *HTTPError {
	return &HTTPError{Code: "invalid-request", Details: details}
}

var methods = map[string]func() types.Method{
	"GET": types.MakeMethodGet, "HEAD": types.MakeMethodHead, "POST": types.MakeMethodPost,
	"PUT": types.MakeMethodPut, "DELETE": types.MakeMethodDelete,
	"CONNECT": types.MakeMethodConnect, "OPTIONS": types.MakeMethodOptions,
	"TRACE": types.MakeMethodTrace, "PATCH": types.MakeMethodPatch,
}

// outgoing builds the request's resource: method, URL and headers.
func outgoing(req HTTPRequest) (*types.OutgoingRequest, error) {
	target, err := url.Parse(req.URL)
	if err != nil || target.Scheme == "" || target.Host == "" {
		return nil, invalid("URL `" + req.URL + "`: not an absolute URL")
	}
	method := types.MakeMethodOther(req.Method)
	if known, ok := methods[strings.ToUpper(req.Method)]; ok {
		method = known()
	} else if req.Method == "" {
		method = types.MakeMethodGet()
	}
	scheme := types.MakeSchemeOther(target.Scheme)
	switch strings.ToLower(target.Scheme) {
	case "http":
		scheme = types.MakeSchemeHttp()
	case "https":
		scheme = types.MakeSchemeHttps()
	}
	entries := make([]witTypes.Tuple2[string, []uint8], 0, len(req.Headers)+1)
	hasLength := false
	for _, h := range req.Headers {
		name := strings.ToLower(h.Name)
		hasLength = hasLength || name == "content-length"
		entries = append(entries, witTypes.Tuple2[string, []uint8]{F0: name, F1: []byte(h.Value)})
	}
	if len(req.Body) > 0 && !hasLength {
		length := strconv.Itoa(len(req.Body))
		entries = append(entries, witTypes.Tuple2[string, []uint8]{F0: "content-length", F1: []byte(length)})
	}
	fields := types.FieldsFromList(entries)
	if fields.IsErr() {
		why := [...]string{"invalid syntax", "forbidden", "immutable"}[fields.Err().Tag()]
		return nil, invalid("headers: " + why)
	}
	request := types.MakeOutgoingRequest(fields.Ok())
	if request.SetMethod(method).IsErr() ||
		request.SetScheme(witTypes.Some(scheme)).IsErr() ||
		request.SetAuthority(witTypes.Some(target.Host)).IsErr() ||
		request.SetPathWithQuery(witTypes.Some(target.RequestURI())).IsErr() {
		request.Drop()
		return nil, invalid("URL `" + req.URL + "`")
	}
	return request, nil
}

// options carries the request's timeout, if any (each setter fails only for a value the
// host cannot represent: its cap applies then).
func options(timeout time.Duration) witTypes.Option[*types.RequestOptions] {
	if timeout <= 0 {
		return witTypes.None[*types.RequestOptions]()
	}
	opts := types.MakeRequestOptions()
	ns := witTypes.Some(uint64(timeout.Nanoseconds()))
	opts.SetConnectTimeout(ns)
	opts.SetFirstByteTimeout(ns)
	opts.SetBetweenBytesTimeout(ns)
	return witTypes.Some(opts)
}
