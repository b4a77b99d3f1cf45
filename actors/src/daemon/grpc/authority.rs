//! Any `:authority` on the unix socket. C-core gRPC clients (Python's grpcio, C++, Ruby) send the
//! socket path as `:authority` (grpcio 1.85 sends `tmp%2Fcuzk.sock` for `unix:/tmp/cuzk.sock`).
//! h2's server builds each request's URI from it with `http::uri::Authority`, which refuses a
//! `/` or a `%` outside an IPv6 zone, and resets the stream (RST_STREAM, PROTOCOL_ERROR) before
//! hyper, tonic or any tower layer sees the request (`h2::server::Peer::convert_poll_message`).
//!
//! So the fix sits below h2: [`AuthorityFix`] wraps a unix-socket connection and, on the way in,
//! decodes each header block (HEADERS and its CONTINUATIONs) with the client's HPACK context,
//! replaces an `:authority` that `http` would refuse by `localhost`, and encodes the block again
//! with a context of its own, the one h2's decoder follows (both start with the default 4096-byte
//! table; hpack's encoder never asks for more). Every other frame, and everything the server
//! sends, passes as it is. A block that does not decode is passed as it came and the rewriting
//! stops for that connection (h2 then answers the connection's compression error itself).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// HTTP/2's client connection preface.
const PREFACE: usize = 24;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The smallest SETTINGS_MAX_FRAME_SIZE a peer may set: every frame written fits it.
const MAX_FRAME: usize = 16_384;

/// What `:authority` becomes where `http` would refuse it.
const STAND_IN: &[u8] = b"localhost";

/// A header block being gathered (HEADERS without END_HEADERS, then CONTINUATIONs).
struct Block {
    stream: u32,
    flags: u8,
    priority: Option<[u8; 5]>,
    fragment: Vec<u8>,
    /// The frames as they came, for a block that does not decode.
    raw: Vec<u8>,
}

/// The inbound half's state: the bytes read and not yet passed, those ready to pass, the HPACK
/// contexts.
struct Rewriter {
    preface_left: usize,
    pending: Vec<u8>,
    ready: Vec<u8>,
    block: Option<Block>,
    decoder: hpack::Decoder<'static>,
    encoder: hpack::Encoder<'static>,
    /// A block failed to decode: pass everything as it is from here on.
    off: bool,
}

/// Whether h2 takes `value` as an authority.
fn acceptable(value: &[u8]) -> bool {
    tonic::codegen::http::uri::Authority::try_from(value).is_ok()
}

fn frame_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

impl Rewriter {
    fn new() -> Rewriter {
        Rewriter {
            preface_left: PREFACE,
            pending: Vec::new(),
            ready: Vec::new(),
            block: None,
            decoder: hpack::Decoder::new(),
            encoder: hpack::Encoder::new(),
            off: false,
        }
    }

    /// Takes `bytes` read from the client; whole frames move to `ready`, rewritten where needed.
    fn feed(&mut self, bytes: &[u8]) {
        if self.off {
            self.ready.extend_from_slice(bytes);
            return;
        }
        self.pending.extend_from_slice(bytes);
        if self.preface_left > 0 {
            let n = self.preface_left.min(self.pending.len());
            self.ready.extend(self.pending.drain(..n));
            self.preface_left -= n;
        }
        let mut at = 0;
        while !self.off && self.pending.len() - at >= 9 {
            let h = &self.pending[at..at + 9];
            let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
            if self.pending.len() - at < 9 + len {
                break;
            }
            let (kind, flags) = (h[3], h[4]);
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            let frame = self.pending[at..at + 9 + len].to_vec();
            at += 9 + len;
            match kind {
                HEADERS => self.headers(frame, flags, stream),
                CONTINUATION => self.continuation(frame, flags),
                _ => self.ready.extend_from_slice(&frame),
            }
        }
        if self.off {
            // Everything not yet passed goes as it is.
            self.ready.extend_from_slice(&self.pending[at..]);
            self.pending.clear();
        } else {
            self.pending.drain(..at);
        }
    }

    fn headers(&mut self, frame: Vec<u8>, flags: u8, stream: u32) {
        let payload = &frame[9..];
        let mut start = 0;
        let mut end = payload.len();
        if flags & PADDED != 0 {
            let pad = payload.first().map_or(usize::MAX, |p| usize::from(*p));
            start = 1;
            end = match end.checked_sub(pad) {
                Some(e) if e >= start => e,
                _ => return self.give_up(frame),
            };
        }
        let priority = if flags & PRIORITY != 0 {
            let Some(p) = payload.get(start..start + 5).filter(|_| start + 5 <= end) else {
                return self.give_up(frame);
            };
            start += 5;
            let mut a = [0; 5];
            a.copy_from_slice(p);
            Some(a)
        } else {
            None
        };
        let block = Block {
            stream,
            flags,
            priority,
            fragment: payload[start..end].to_vec(),
            raw: frame,
        };
        if flags & END_HEADERS != 0 {
            self.finish(block);
        } else {
            self.block = Some(block);
        }
    }

    fn continuation(&mut self, frame: Vec<u8>, flags: u8) {
        let Some(mut block) = self.block.take() else {
            // Not after a HEADERS: h2 answers it.
            return self.give_up(frame);
        };
        block.fragment.extend_from_slice(&frame[9..]);
        block.raw.extend_from_slice(&frame);
        if flags & END_HEADERS != 0 {
            self.finish(block);
        } else {
            self.block = Some(block);
        }
    }

    /// Decodes a whole block, replaces a refused `:authority`, encodes it again as frames.
    fn finish(&mut self, block: Block) {
        let headers = match self.decoder.decode(&block.fragment) {
            Ok(h) => h,
            Err(_) => return self.give_up(block.raw),
        };
        let headers: Vec<(Vec<u8>, Vec<u8>)> = headers
            .into_iter()
            .map(|(n, v)| {
                if n == b":authority" && !acceptable(&v) {
                    (n, STAND_IN.to_vec())
                } else {
                    (n, v)
                }
            })
            .collect();
        let encoded = self
            .encoder
            .encode(headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice())));
        let room = MAX_FRAME - block.priority.map_or(0, |_| 5);
        let first = encoded.len().min(room);
        let mut flags = block.flags & END_STREAM;
        if block.priority.is_some() {
            flags |= PRIORITY;
        }
        if first == encoded.len() {
            flags |= END_HEADERS;
        }
        let len = first + block.priority.map_or(0, |_| 5);
        frame_header(&mut self.ready, len, HEADERS, flags, block.stream);
        if let Some(p) = block.priority {
            self.ready.extend_from_slice(&p);
        }
        self.ready.extend_from_slice(&encoded[..first]);
        let mut rest = &encoded[first..];
        while !rest.is_empty() {
            let n = rest.len().min(MAX_FRAME);
            let flags = if n == rest.len() { END_HEADERS } else { 0 };
            frame_header(&mut self.ready, n, CONTINUATION, flags, block.stream);
            self.ready.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
    }

    /// Passes `raw` as it came and stops rewriting this connection.
    fn give_up(&mut self, raw: Vec<u8>) {
        if let Some(b) = self.block.take() {
            self.ready.extend_from_slice(&b.raw);
        }
        self.ready.extend_from_slice(&raw);
        self.off = true;
    }
}

/// A connection whose inbound header blocks carry an `:authority` h2 accepts (see the module
/// docs); writes go through untouched.
pub struct AuthorityFix<S> {
    inner: S,
    rw: Rewriter,
    /// How much of `rw.ready` the reader has taken.
    taken: usize,
}

impl<S> AuthorityFix<S> {
    pub fn new(inner: S) -> AuthorityFix<S> {
        AuthorityFix {
            inner,
            rw: Rewriter::new(),
            taken: 0,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for AuthorityFix<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            if me.taken < me.rw.ready.len() {
                let n = (me.rw.ready.len() - me.taken).min(buf.remaining());
                buf.put_slice(&me.rw.ready[me.taken..me.taken + n]);
                me.taken += n;
                if me.taken == me.rw.ready.len() {
                    me.rw.ready.clear();
                    me.taken = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 << 10];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut me.inner).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                    // The client closed: whatever is left of a frame goes as it is.
                    if me.rw.pending.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                    let rest = std::mem::take(&mut me.rw.pending);
                    me.rw.ready.extend_from_slice(&rest);
                }
                Poll::Ready(Ok(())) => me.rw.feed(rb.filled()),
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AuthorityFix<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for AuthorityFix<tokio::net::UnixStream> {
    type ConnectInfo = <tokio::net::UnixStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_frame(block: &[u8], flags: u8, stream: u32) -> Vec<u8> {
        let mut f = Vec::new();
        frame_header(&mut f, block.len(), HEADERS, flags, stream);
        f.extend_from_slice(block);
        f
    }

    /// Decodes every HEADERS block of `bytes` (after the preface) with a fresh context.
    fn blocks(bytes: &[u8]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut d = hpack::Decoder::new();
        let (mut at, mut out) = (PREFACE, Vec::new());
        let mut fragment = Vec::new();
        while at + 9 <= bytes.len() {
            let len = usize::from(bytes[at]) << 16
                | usize::from(bytes[at + 1]) << 8
                | usize::from(bytes[at + 2]);
            let (kind, flags) = (bytes[at + 3], bytes[at + 4]);
            let skip = if kind == HEADERS && flags & PRIORITY != 0 {
                5
            } else {
                0
            };
            if kind == HEADERS || kind == CONTINUATION {
                fragment.extend_from_slice(&bytes[at + 9 + skip..at + 9 + len]);
                if flags & END_HEADERS != 0 {
                    out.push(d.decode(&fragment).unwrap());
                    fragment.clear();
                }
            }
            at += 9 + len;
        }
        out
    }

    #[test]
    fn a_path_authority_becomes_localhost_and_the_rest_is_kept_across_blocks() {
        let mut client = hpack::Encoder::new();
        let req: Vec<(&[u8], &[u8])> = vec![
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", b"/cuzk.v1.ProvingEngine/GetStatus"),
            (b":authority", b"tmp%2Fcuzk.sock"),
            (b"te", b"trailers"),
        ];
        let mut wire = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // A SETTINGS frame passes as it is.
        frame_header(&mut wire, 0, 0x4, 0, 0);
        // Two requests: the second refers to the client's dynamic table.
        wire.extend(headers_frame(&client.encode(req.clone()), END_HEADERS, 1));
        wire.extend(headers_frame(
            &client.encode(req.clone()),
            END_HEADERS | END_STREAM,
            3,
        ));
        let mut rw = Rewriter::new();
        // Fed in small pieces, as reads may come.
        for piece in wire.chunks(7) {
            rw.feed(piece);
        }
        assert!(!rw.off && rw.pending.is_empty());
        let got = blocks(&rw.ready);
        assert_eq!(got.len(), 2);
        for b in &got {
            let auth = b.iter().find(|(n, _)| n == b":authority").unwrap();
            assert_eq!(auth.1, b"localhost");
            assert!(b
                .iter()
                .any(|(n, v)| n == b":path" && v == b"/cuzk.v1.ProvingEngine/GetStatus"));
        }
        // A valid authority is left alone.
        let mut rw = Rewriter::new();
        let mut wire = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        let ok: Vec<(&[u8], &[u8])> = vec![(b":authority", b"localhost:50051")];
        wire.extend(headers_frame(
            &hpack::Encoder::new().encode(ok),
            END_HEADERS,
            1,
        ));
        rw.feed(&wire);
        assert_eq!(blocks(&rw.ready)[0][0].1, b"localhost:50051");
    }

    #[test]
    fn a_block_that_does_not_decode_passes_as_it_came() {
        let mut rw = Rewriter::new();
        let mut wire = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // Index 127 of an empty dynamic table: no such entry.
        wire.extend(headers_frame(&[0xff, 0x00], END_HEADERS, 1));
        wire.extend(b"tail");
        rw.feed(&wire);
        assert!(rw.off);
        assert_eq!(rw.ready, wire);
    }
}
