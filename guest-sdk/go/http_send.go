//go:build sluice_0_2

package task

// HTTPSend (contract 0.2): one request through `wasi:http/outgoing-handler`, its body
// written and the whole response read, every resource dropped in order (a stream before
// its body, a body before its request or response) rather than left to the collector.

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	handler "sluice.invalid/task/bindings/v0.2/imports/wasi_http_outgoing_handler"
	types "sluice.invalid/task/bindings/v0.2/imports/wasi_http_types"
	streams "sluice.invalid/task/bindings/v0.2/imports/wasi_io_streams"
)

// The most a blocking write may pass at once (wasi:io's per-call limit), and the most
// read at once.
const (
	writeChunk = 4096
	readChunk  = 64 * 1024
)

// HTTPSend sends the request and reads the whole response; a failure is an *HTTPError.
func HTTPSend(req HTTPRequest) (*HTTPResponse, error) {
	request, err := outgoing(req)
	if err != nil {
		return nil, err
	}
	body := request.Body()
	if body.IsErr() {
		request.Drop()
		return nil, invalid("request body taken twice")
	}
	outgoingBody := body.Ok()
	sent := handler.Handle(request, options(req.Timeout))
	if sent.IsErr() {
		outgoingBody.Drop()
		return nil, codeError(sent.Err())
	}
	future := sent.Ok()
	closed, failed := writeBody(outgoingBody, req.Body)
	if failed != nil {
		future.Drop()
		return nil, failed
	}

	// The response head. A body the host stopped taking (over its cap, or the request
	// refused) closed the stream: why is the response's error code, so it is read first.
	ready := future.Subscribe()
	ready.Block()
	ready.Drop()
	got := future.Get()
	future.Drop()
	if got.IsNone() {
		return nil, invalid("response not ready after waiting for it")
	}
	if got.Some().IsErr() {
		return nil, invalid("response taken twice")
	}
	if got.Some().Ok().IsErr() {
		return nil, codeError(got.Some().Ok().Err())
	}
	response := got.Some().Ok().Ok()
	defer response.Drop()
	if closed != nil {
		return nil, closed
	}
	return readResponse(response)
}

// writeBody writes body and finishes it. closed: the host closed the stream (the caller
// reports the response's error); failed: any other failure (the body is dropped).
func writeBody(body *types.OutgoingBody, bytes []byte) (closed, failed *HTTPError) {
	stream := body.Write()
	if stream.IsErr() {
		body.Drop()
		return nil, invalid("request body stream taken twice")
	}
	out := stream.Ok()
	for off := 0; off < len(bytes); off += writeChunk {
		chunk := bytes[off:min(off+writeChunk, len(bytes))]
		written := out.BlockingWriteAndFlush(chunk)
		if written.IsErr() {
			out.Drop()
			body.Drop()
			if written.Err().Tag() == streams.StreamError_Closed {
				return streamError(written.Err()), nil
			}
			return nil, streamError(written.Err())
		}
	}
	out.Drop()
	if finished := types.OutgoingBodyFinish(body, witTypes.None[*types.Fields]()); finished.IsErr() {
		return nil, codeError(finished.Err())
	}
	return nil, nil
}

// readResponse reads the status, headers and whole body of response.
func readResponse(response *types.IncomingResponse) (*HTTPResponse, error) {
	res := &HTTPResponse{Status: int(response.Status())}
	headers := response.Headers()
	for _, entry := range headers.Entries() {
		res.Headers = append(res.Headers, Header{Name: entry.F0, Value: string(entry.F1)})
	}
	headers.Drop()
	consumed := response.Consume()
	if consumed.IsErr() {
		return nil, invalid("response body taken twice")
	}
	incoming := consumed.Ok()
	stream := incoming.Stream()
	if stream.IsErr() {
		incoming.Drop()
		return nil, invalid("response body stream taken twice")
	}
	in := stream.Ok()
	res.Body = []byte{}
	for {
		chunk := in.BlockingRead(readChunk)
		if chunk.IsErr() {
			if chunk.Err().Tag() == streams.StreamError_Closed {
				break
			}
			in.Drop()
			incoming.Drop()
			return nil, streamError(chunk.Err())
		}
		res.Body = append(res.Body, chunk.Ok()...)
	}
	in.Drop()
	types.IncomingBodyFinish(incoming).Drop()
	return res, nil
}
