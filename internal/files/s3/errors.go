package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mure-dev/mure/internal/files"
)

// Error is an S3 error: its code and status are S3's (see the S3 API
// reference, "Error responses"); the message is written for a person.
type Error struct {
	Code    string
	Status  int
	Message string
	// RetryAfter, when set, is sent as Retry-After (seconds).
	RetryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// errorf returns an S3 error of code with a formatted message.
func errorf(status int, code, format string, args ...any) *Error {
	return &Error{Code: code, Status: status, Message: fmt.Sprintf(format, args...)}
}

// The S3 error codes this face answers.
const (
	CodeAccessDenied          = "AccessDenied"
	CodeBadDigest             = "BadDigest"
	CodeBucketAlreadyOwned    = "BucketAlreadyOwnedByYou"
	CodeBucketNotEmpty        = "BucketNotEmpty"
	CodeEntityTooLarge        = "EntityTooLarge"
	CodeIncompleteBody        = "IncompleteBody"
	CodeInternalError         = "InternalError"
	CodeInvalidAccessKeyID    = "InvalidAccessKeyId"
	CodeInvalidArgument       = "InvalidArgument"
	CodeInvalidBucketName     = "InvalidBucketName"
	CodeInvalidDigest         = "InvalidDigest"
	CodeInvalidObjectName     = "InvalidObjectName"
	CodeInvalidRange          = "InvalidRange"
	CodeInvalidRequest        = "InvalidRequest"
	CodeMalformedXML          = "MalformedXML"
	CodeMissingSecurityHeader = "MissingSecurityHeader"
	CodeAuthorizationHeader   = "AuthorizationHeaderMalformed"
	CodeNoSuchBucket          = "NoSuchBucket"
	CodeNoSuchKey             = "NoSuchKey"
	CodeNotImplemented        = "NotImplemented"
	CodePreconditionFailed    = "PreconditionFailed"
	CodeRequestTimeTooSkewed  = "RequestTimeTooSkewed"
	CodeServiceUnavailable    = "ServiceUnavailable"
	CodeSignatureDoesNotMatch = "SignatureDoesNotMatch"
	CodeSlowDown              = "SlowDown"
	CodeSHA256Mismatch        = "XAmzContentSHA256Mismatch"
	CodeExpiredToken          = "AccessDenied" // an expired presigned URL: S3 answers AccessDenied
)

type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId"`
}

// writeError answers err as S3 XML. An error that is not an *Error is
// mapped from the file API's kinds (fileError).
func writeError(w http.ResponseWriter, r *http.Request, reqID string, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = fileError(err)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(e.Status)
	if r.Method == http.MethodHead {
		return
	}
	body := errorBody{Code: e.Code, Message: e.Message, Resource: r.URL.Path, RequestID: reqID}
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(body)
}

// writeErrorBody writes err as an S3 error document into an answer whose
// status (200) is already sent: a CompleteMultipartUpload that failed
// after its keep-alive started.
func writeErrorBody(q *request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = fileError(err)
	}
	_ = xml.NewEncoder(q.w).Encode(errorBody{Code: e.Code, Message: e.Message, Resource: q.r.URL.Path, RequestID: q.id})
}

// fileError maps an error of the file API to S3's code and status; the
// message is the file API's, which is written for a person.
func fileError(err error) *Error {
	msg := err.Error()
	var un *files.UnavailableError
	switch {
	case errors.Is(err, files.ErrNotFound):
		return &Error{Code: CodeNoSuchKey, Status: http.StatusNotFound, Message: "The specified key does not exist."}
	case errors.Is(err, files.ErrPrecondition):
		return &Error{Code: CodePreconditionFailed, Status: http.StatusPreconditionFailed, Message: "At least one of the preconditions you specified did not hold."}
	case errors.Is(err, files.ErrTooLarge):
		return &Error{Code: CodeEntityTooLarge, Status: http.StatusBadRequest, Message: msg}
	case errors.Is(err, files.ErrTruncated):
		return &Error{Code: CodeIncompleteBody, Status: http.StatusBadRequest, Message: msg}
	case errors.Is(err, files.ErrBadPath):
		return &Error{Code: CodeInvalidObjectName, Status: http.StatusBadRequest, Message: msg}
	case errors.Is(err, files.ErrBadRequest):
		return &Error{Code: CodeInvalidArgument, Status: http.StatusBadRequest, Message: msg}
	case errors.As(err, &un):
		secs := max(1, int(un.RetryAfter.Seconds()+0.5))
		if errors.Is(err, files.ErrNoQuorum) {
			// The file API's message offers ?stale=1, a native API option.
			msg = "this node cannot confirm its view with the cluster leader right now (no quorum or no read lease); retry, here or on another node"
			if un.Cause != nil {
				msg += " (" + un.Cause.Error() + ")"
			}
		}
		return &Error{Code: CodeServiceUnavailable, Status: http.StatusServiceUnavailable, Message: msg, RetryAfter: secs}
	case errors.Is(err, files.ErrUnavailable), errors.Is(err, files.ErrConflict), errors.Is(err, files.ErrHeldElsewhere):
		return &Error{Code: CodeServiceUnavailable, Status: http.StatusServiceUnavailable, Message: msg, RetryAfter: 1}
	case errors.Is(err, files.ErrNoSpace):
		return &Error{Code: CodeServiceUnavailable, Status: http.StatusInsufficientStorage, Message: msg, RetryAfter: 5}
	}
	return &Error{Code: CodeInternalError, Status: http.StatusInternalServerError, Message: msg}
}
