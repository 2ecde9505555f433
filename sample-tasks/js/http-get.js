// `http-get`: payload {"url": "...", "timeout_ms": N?, "times": N?, "upload_bytes": N?,
// "via": "fetch"?}; fetches the URL (`times` times, default once) through the host's egress
// policy and completes with the last response's {"status": S, "body_bytes": N, "body_head":
// "first 64 bytes", "requests": N}. With `upload_bytes` it POSTs that many bytes (`x`)
// instead of GETting (a body for the host's request-body cap). A request the host refuses
// or that fails ends the job `dead` at once, its message naming the wasi:http error code (a
// refusal will not change on a retry). The same task as the Rust sample
// sample-tasks/http-get; built with componentize-js against the world task-http of
// guest-sdk/js/wit (contract 0.2).
//
// `"via": "fetch"` sends the requests with StarlingMonkey's global `fetch` from an async
// handler instead of sluice-http.js (a failed fetch has no error code: the job ends `dead`
// with `fetch failed: NetworkError ...`; `timeout_ms` is not applied).
import { Fatal, task } from "../../guest-sdk/js/sluice-task.js";
import { HttpError, http } from "../../guest-sdk/js/sluice-http.js";

const summary = (status, body, requests) => ({
  status,
  body_bytes: body.length,
  body_head: new TextDecoder().decode(body.subarray(0, 64)),
  requests,
});

async function viaFetch(url, times) {
  let status;
  let body;
  for (let i = 0; i < times; i++) {
    let response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw new Fatal(`fetch failed: ${e.name}: ${e.message}`);
    }
    status = response.status;
    body = new Uint8Array(await response.arrayBuffer());
  }
  return summary(status, body, times);
}

export const run = task((job) => {
  const args = job.json();
  if (!args || typeof args.url !== "string") throw new Fatal("payload needs a string `url`");
  const times = Math.max(1, Math.floor(Number(args.times) || 1));
  if (args.via === "fetch") return viaFetch(args.url, times);
  const upload =
    args.upload_bytes == null ? null : new Uint8Array(Number(args.upload_bytes)).fill(0x78);
  let response;
  for (let i = 0; i < times; i++) {
    try {
      response = upload
        ? http.post(args.url, { body: upload, timeoutMs: args.timeout_ms })
        : http.get(args.url, { timeoutMs: args.timeout_ms });
    } catch (e) {
      if (e instanceof HttpError) throw new Fatal(e.message);
      throw e;
    }
  }
  return summary(response.status, response.body, times);
});
