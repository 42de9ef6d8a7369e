//! Reading Kubernetes objects from files, directories, stdin and strings.
//!
//! Pipeline per input: cut the text into documents ([`split`]), parse each into
//! generic data with serde-saphyr under a resource budget ([`document`]), dispatch on
//! `apiVersion`/`kind`, convert to the k8s-openapi type (naming the field and line
//! of a type error), apply API-server defaults, then check for duplicates. Documents
//! are parsed in parallel (a JSON stream, which has no document markers, in pieces cut
//! where a line starts a value: [`split::split_json_stream`]); results are assembled in
//! input order, so the outcome does not depend on threads.

mod common_shapes;
mod document;
mod head;
mod scan;
mod split;

use std::collections::hash_map::Entry;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use dra_types::hashing::WordHashMap;
use dra_types::parallel::map_in_order;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use serde_saphyr::{MessageFormatter, Spanned, UserMessageFormatter};

use crate::cluster::{
    AnyObject, Cluster, SliceDoc, SliceJson, decode, decode_json, supported_kinds,
};
use crate::defaults::apply_object_defaults;
use crate::diagnostic::Diagnostic;
use crate::source::{Located, ObjectRef, Source};
use document::{DocRoot, LineTree, Step};
use head::{Head, MetadataOnly};
use scan::{LineBreaks, is_json_whitespace, scan_object, scan_object_to_line_end};
use split::{Chunk, count_newlines, split_documents, split_json_stream};

/// How to load. `Default` suits command-line use.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Deepest nesting of mappings and sequences accepted in a document.
    pub max_depth: usize,
    /// Larger files are refused (a diagnostic, the rest still loads).
    pub max_file_bytes: u64,
    /// Worker threads for parsing one input; 0 picks the number of CPUs (at most 8).
    pub threads: usize,
    /// Keep every ResourceSlice in [`Cluster::slice_docs`], those of JSON streams as their
    /// text (with only the metadata decoded), for a caller that decodes them itself
    /// (`dra_alloc::SliceInput::Json`): decoding slices into k8s-openapi objects and holding
    /// them is most of the time and memory of loading a device-heavy cluster. The loader does
    /// not check such text any further (not even the JSON grammar of its `spec`, which it
    /// only skips by brackets and strings), so a caller that meets text that does not decode
    /// loads again without this option to report it.
    pub defer_slices: bool,
    /// With `defer_slices`, told of every slice kept as text the moment the loader finds it,
    /// in input order, while the rest of the input is still being read: a caller can start
    /// converting slices on another thread meanwhile. Only inputs read on one thread tell
    /// (a large JSON stream read in parallel pieces tells nothing), and a slice told is not
    /// necessarily among the answer's [`Cluster::slice_docs`] as that text (its part of the
    /// input may take the generic route after all, which decodes it): a caller checks what
    /// it converted against what the loader answered, by the texts' addresses.
    pub slice_sink: Option<SliceSink>,
}

/// Where [`LoadOptions::slice_sink`] tells of slices: a function called on the loading
/// thread, which should only hand the slice on (its [`SliceJson::shared_text`]).
#[derive(Clone)]
pub struct SliceSink(Arc<dyn Fn(&SliceJson) + Send + Sync>);

impl SliceSink {
    /// A sink that calls `tell` with each slice found.
    pub fn new(tell: impl Fn(&SliceJson) + Send + Sync + 'static) -> Self {
        SliceSink(Arc::new(tell))
    }

    fn tell(&self, slice: &SliceJson) {
        (self.0)(slice);
    }
}

impl std::fmt::Debug for SliceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SliceSink")
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_depth: 64,
            max_file_bytes: 1 << 30,
            threads: 0,
            defer_slices: false,
            slice_sink: None,
        }
    }
}

/// The outcome of loading: the objects, and what was wrong with the input.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub cluster: Cluster,
    /// Problems found while reading, in input order: unreadable or malformed
    /// documents, type errors, unsupported and unknown kinds, duplicates. API
    /// validation is separate ([`crate::validate`]).
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// A failure that stops loading altogether (a path that cannot be read). Problems
/// inside readable input are [`Diagnostic`]s instead.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A path could not be read.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Loads files, directories (recursively: `*.yaml`, `*.yml`, `*.json`, in sorted
/// order) and `-` (standard input), in the order given.
pub fn load_paths<P: AsRef<Path>>(paths: &[P], options: &LoadOptions) -> Result<Loaded, LoadError> {
    let mut loader = Loader::new(options);
    for path in paths {
        let path = path.as_ref();
        if path.as_os_str() == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|source| LoadError::Io {
                    path: "<stdin>".to_string(),
                    source,
                })?;
            loader.add_bytes("<stdin>", bytes);
            continue;
        }
        let metadata = fs::metadata(path).map_err(|source| io_error(path, source))?;
        if metadata.is_dir() {
            let mut files = Vec::new();
            let mut visited = Vec::new();
            collect_files(path, &mut files, &mut visited)
                .map_err(|(p, source)| io_error(&p, source))?;
            for file in files {
                loader.add_file(&file)?;
            }
        } else {
            loader.add_file(path)?;
        }
    }
    Ok(loader.finish())
}

/// Loads objects from text in memory; `name` is used in positions
/// (`<builtin:example>`, a file name).
pub fn load_str(name: &str, text: &str) -> Loaded {
    load_str_with(name, text, &LoadOptions::default())
}

/// [`load_str`] with options.
pub fn load_str_with(name: &str, text: &str, options: &LoadOptions) -> Loaded {
    load_string_with(name, text.to_owned(), options)
}

/// [`load_str_with`] for text the caller owns and gives away: a large input is not copied
/// (slices kept as text share it).
pub fn load_string_with(name: &str, text: String, options: &LoadOptions) -> Loaded {
    let mut loader = Loader::new(options);
    loader.add_text(name, &Arc::new(text));
    loader.finish()
}

fn io_error(path: &Path, source: std::io::Error) -> LoadError {
    LoadError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "yaml" | "yml" | "json"))
}

/// Files under `dir` with a manifest extension, sorted per directory by name and
/// depth first. Directories reached twice (symbolic link loops) are skipped.
fn collect_files(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    visited: &mut Vec<PathBuf>,
) -> Result<(), (PathBuf, std::io::Error)> {
    let canonical = fs::canonicalize(dir).map_err(|e| (dir.to_path_buf(), e))?;
    if visited.contains(&canonical) {
        return Ok(());
    }
    visited.push(canonical);
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| (dir.to_path_buf(), e))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| (dir.to_path_buf(), e))?;
    entries.sort();
    for entry in entries {
        let metadata = match fs::metadata(&entry) {
            Ok(m) => m,
            // A dangling symbolic link is not an input.
            Err(_) if fs::symlink_metadata(&entry).is_ok() => continue,
            Err(e) => return Err((entry, e)),
        };
        if metadata.is_dir() {
            collect_files(&entry, files, visited)?;
        } else if metadata.is_file() && is_manifest(&entry) {
            files.push(entry);
        }
    }
    Ok(())
}

/// An object read from a document, before it joins the cluster.
struct Decoded {
    source: Source,
    object: Item,
}

/// What a document gave: an object, or a ResourceSlice kept as text.
enum Item {
    Object(AnyObject),
    SliceJson(Box<SliceJson>),
}

impl From<AnyObject> for Item {
    fn from(object: AnyObject) -> Item {
        Item::Object(object)
    }
}

/// What one chunk produced, in document order.
#[derive(Default)]
struct ChunkOutput {
    objects: Vec<Decoded>,
    diagnostics: Vec<Diagnostic>,
}

struct Loader<'a> {
    options: &'a LoadOptions,
    cluster: Cluster,
    diagnostics: Vec<Diagnostic>,
    /// First definition of each (kind, namespace, name).
    /// Only looked up, never iterated, so its order cannot show.
    seen: WordHashMap<(&'static str, String, String), Source>,
}

impl<'a> Loader<'a> {
    fn new(options: &'a LoadOptions) -> Self {
        Loader {
            options,
            cluster: Cluster::default(),
            diagnostics: Vec::new(),
            seen: WordHashMap::default(),
        }
    }

    fn finish(self) -> Loaded {
        Loaded {
            cluster: self.cluster,
            diagnostics: self.diagnostics,
        }
    }

    fn add_file(&mut self, path: &Path) -> Result<(), LoadError> {
        let name = path.display().to_string();
        let metadata = fs::metadata(path).map_err(|source| io_error(path, source))?;
        if metadata.len() > self.options.max_file_bytes {
            self.diagnostics.push(
                Diagnostic::error(format!(
                    "file is larger than the limit of {} bytes; skipped",
                    self.options.max_file_bytes
                ))
                .at(Source::new(name, 1)),
            );
            return Ok(());
        }
        let bytes = fs::read(path).map_err(|source| io_error(path, source))?;
        self.add_bytes(&name, bytes);
        Ok(())
    }

    fn add_bytes(&mut self, name: &str, bytes: Vec<u8>) {
        match String::from_utf8(bytes) {
            Ok(text) => self.add_text(name, &Arc::new(text)),
            Err(err) => {
                let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
                let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
                self.diagnostics.push(
                    Diagnostic::error("input is not valid UTF-8")
                        .at(Source::new(name, line_u32(line))),
                );
            }
        }
    }

    /// Loads the objects of `source`, a whole input. Slices kept as text share it
    /// ([`SliceJson`]) instead of copying their part of it.
    fn add_text(&mut self, name: &str, source: &Arc<String>) {
        let file: Arc<str> = Arc::from(name);
        let text = source.strip_prefix('\u{feff}').unwrap_or(source);
        let chunks = match split_documents(text) {
            Some(chunks) => chunks,
            None => vec![Chunk {
                text,
                first_line: 1,
            }],
        };
        let (threads, pieces) = match chunks.as_slice() {
            [chunk] => self.json_pieces(chunk.text),
            _ => (1, 1),
        };
        let outputs = match (pieces > 1)
            .then(|| parse_json_pieces(&file, source, chunks[0], self.options, threads, pieces))
            .flatten()
        {
            Some(mut outputs) => {
                // The pieces are one chunk's: its diagnostics come before what inserting its
                // objects reports, as for any chunk.
                for output in &mut outputs {
                    self.diagnostics.append(&mut output.diagnostics);
                }
                outputs
            }
            None => {
                let threads = self.thread_count(text.len(), chunks.len());
                parse_chunks(&file, source, &chunks, self.options, threads)
            }
        };
        AnyObject::reserve_in(
            outputs.iter().flat_map(|o| {
                o.objects.iter().filter_map(|d| match &d.object {
                    Item::Object(object) => Some(object),
                    Item::SliceJson(_) => None,
                })
            }),
            &mut self.cluster,
        );
        // Every named object gets an entry; growing the map step by step rehashed it a dozen
        // times for a large stream.
        self.seen
            .reserve(outputs.iter().map(|o| o.objects.len()).sum::<usize>());
        for output in outputs {
            self.diagnostics.extend(output.diagnostics);
            for decoded in output.objects {
                self.insert(decoded);
            }
        }
    }

    fn thread_count(&self, len: usize, chunks: usize) -> usize {
        // Threads only pay off for large inputs.
        if len < (1 << 20) || chunks < 2 {
            return 1;
        }
        self.wanted_threads().min(chunks).max(1)
    }

    /// On how many threads, and in how many pieces, a stream of JSON values (one chunk: JSON
    /// has no document markers) is decoded: a thread per [`JSON_THREAD_MIN_BYTES`], and
    /// [`PIECES_PER_THREAD`] pieces per thread of at least [`JSON_PIECE_MIN_BYTES`] each.
    fn json_pieces(&self, text: &str) -> (usize, usize) {
        if !text.trim_start().starts_with('{') {
            return (1, 1);
        }
        let threads = self
            .wanted_threads()
            .min(text.len() / JSON_THREAD_MIN_BYTES)
            .max(1);
        if threads < 2 {
            return (1, 1);
        }
        let pieces = (threads * PIECES_PER_THREAD)
            .min(text.len() / JSON_PIECE_MIN_BYTES)
            .max(threads);
        (threads, pieces)
    }

    fn wanted_threads(&self) -> usize {
        match self.options.threads {
            0 => dra_types::parallel::available_threads().min(8),
            n => n,
        }
    }

    fn insert(&mut self, decoded: Decoded) {
        let (info, meta) = match &decoded.object {
            Item::Object(object) => (object.info(), object.metadata()),
            Item::SliceJson(json) => (AnyObject::slice_info(), &json.metadata),
        };
        let name = meta.name.clone().unwrap_or_default();
        if !name.is_empty() {
            let namespace = if info.namespaced {
                meta.namespace.clone().unwrap_or_default()
            } else {
                String::new()
            };
            let key = (info.kind, namespace, name);
            match self.seen.entry(key) {
                Entry::Occupied(first) => {
                    let (kind, namespace, name) = first.key();
                    let object = ObjectRef::new(
                        *kind,
                        info.namespaced.then_some(namespace.as_str()),
                        name.clone(),
                    );
                    self.diagnostics.push(
                        Diagnostic::error(format!(
                            "duplicate object: already defined at {}",
                            first.get()
                        ))
                        .at(decoded.source.clone())
                        .on(object),
                    );
                }
                Entry::Vacant(slot) => {
                    slot.insert(decoded.source.clone());
                }
            }
        }
        let slice = match decoded.object {
            Item::Object(AnyObject::ResourceSlice(slice)) if self.options.defer_slices => {
                SliceDoc::Object(*slice)
            }
            Item::Object(object) => return object.push_into(decoded.source, &mut self.cluster),
            Item::SliceJson(json) => SliceDoc::Json(*json),
        };
        self.cluster
            .slice_docs
            .push(Located::new(decoded.source, slice));
    }
}

fn line_u32(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// Below this much JSON per thread, a thread costs more to start and to set up its memory
/// than it saves: a second thread takes a fresh 2 MiB huge page for its heap, which the
/// kernel zeroes, and wakes a second core. With 128 KiB, gpu-nic's 0.59 MB and
/// gpu-selector's 0.92 MB were read on two threads, and their whole runs took 0.2-0.4 ms
/// longer than on one (with one huge page more); scheduler-perf's 3.2 MB still gains 4 ms
/// from the second (BENCHMARKS.md, "Fewer cpuid traps, one thread for small inputs").
const JSON_THREAD_MIN_BYTES: usize = 1 << 20;

/// Pieces per thread an input is cut into. The threads take the next piece as they finish
/// one, so that the work evens out: a byte of pods costs the loader several times a byte of
/// slices, which it only scans (gpu-selector cut in two halves by length kept one thread busy
/// 13.3 M instructions and the other 7.9 M).
const PIECES_PER_THREAD: usize = 4;

/// The smallest piece worth cutting: a piece costs one more cut to check and one more
/// decoder to set up.
const JSON_PIECE_MIN_BYTES: usize = 32 << 10;

/// A stream of JSON values decoded in `pieces` parallel pieces, or `None` when the stream
/// has to be decoded as a whole: a cut fell inside a value, or a piece needs the generic
/// route (see [`json_direct`]). When every piece decodes, each cut is a boundary between
/// values, so the objects and diagnostics, concatenated in order, are the whole stream's.
/// The pieces' outputs are given as they are, in order: concatenating them first grew a
/// list step by step through fresh memory for nothing.
fn parse_json_pieces(
    file: &Arc<str>,
    source: &Arc<String>,
    chunk: Chunk<'_>,
    options: &LoadOptions,
    threads: usize,
    pieces: usize,
) -> Option<Vec<ChunkOutput>> {
    let pieces = split_json_stream(chunk, pieces);
    if pieces.len() < 2 {
        return None;
    }
    // Per-node lines come from parsing a chunk as YAML, which fails for a stream of two or
    // more JSON values; a piece holding one value must not do better than its stream would.
    map_in_order(&pieces, threads, 1, |piece| {
        json_direct(file, source, *piece, options, &OnceLock::from(None), None)
    })
    .into_iter()
    .collect()
}

/// Parses every chunk, on `threads` threads, returning outputs in chunk order.
fn parse_chunks(
    file: &Arc<str>,
    source: &Arc<String>,
    chunks: &[Chunk<'_>],
    options: &LoadOptions,
    threads: usize,
) -> Vec<ChunkOutput> {
    if threads <= 1 {
        // One thread reads the chunks in input order: the order the sink promises.
        let sink = options.slice_sink.as_ref();
        return chunks
            .iter()
            .map(|chunk| parse_chunk(file, source, *chunk, options, sink))
            .collect();
    }
    // Contiguous, byte-balanced ranges of chunks, several per thread.
    let parts_wanted = threads * PIECES_PER_THREAD;
    let total: usize = chunks.iter().map(|c| c.text.len()).sum();
    let per_part = total.div_ceil(parts_wanted);
    let mut ranges = Vec::with_capacity(parts_wanted);
    let mut start = 0;
    let mut acc = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        acc += chunk.text.len();
        if acc >= per_part && ranges.len() + 1 < parts_wanted {
            ranges.push(start..i + 1);
            start = i + 1;
            acc = 0;
        }
    }
    if start < chunks.len() {
        ranges.push(start..chunks.len());
    }
    let parts: Vec<&[Chunk<'_>]> = ranges.into_iter().map(|range| &chunks[range]).collect();
    map_in_order(&parts, threads, 1, |part| {
        part.iter()
            .map(|chunk| parse_chunk(file, source, *chunk, options, None))
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

fn saphyr_options(len: usize, max_depth: usize) -> serde_saphyr::Options {
    // The budget scales with the input: the limits exist to stop amplification
    // (aliases) and runaway nesting, not to refuse large honest inputs.
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: max_depth,
            max_events: len.saturating_mul(4).saturating_add(1_000_000),
            max_nodes: len.saturating_mul(2).saturating_add(250_000),
            max_total_scalar_bytes: len.saturating_add(64 << 20),
            max_documents: (len / 2).saturating_add(1024),
            max_reader_input_bytes: None,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 100_000,
        },
        with_snippet: false,
        emit_comments: false,
    }
}

/// A YAML error as message text and a 1-based line relative to the parsed text.
fn yaml_error(err: &serde_saphyr::Error) -> (String, Option<u32>) {
    let message = UserMessageFormatter
        .format_message(err.without_snippet())
        .into_owned();
    let line = err
        .location()
        .map(|l| l.line())
        .filter(|&l| l > 0)
        .map(|l| u32::try_from(l).unwrap_or(u32::MAX));
    (message, line)
}

/// Whether a JSON value needs per-item lines, which only the YAML parser records: lists of
/// objects (`kind: List`, typed `...List`, JSON arrays).
fn has_items(value: &Value) -> bool {
    match value {
        Value::Array(_) => true,
        Value::Object(map) => map.get("items").is_some_and(Value::is_array),
        _ => false,
    }
}

fn parse_chunk(
    file: &Arc<str>,
    source: &Arc<String>,
    chunk: Chunk<'_>,
    options: &LoadOptions,
    sink: Option<&SliceSink>,
) -> ChunkOutput {
    // JSON (what `kubectl get -o json` and `dra gen -o json` print) is parsed by serde_json,
    // an order of magnitude faster than the YAML parser. Lists go through the YAML parser,
    // which knows the line of every item; so does anything serde_json rejects, to get
    // YAML's error message. serde_json bounds nesting itself (128 levels).
    if chunk.text.trim_start().starts_with(['{', '['])
        && let Some(output) = json_direct(file, source, chunk, options, &OnceLock::new(), sink)
    {
        return output;
    }
    if chunk.text.trim_start().starts_with(['{', '['])
        && let Ok(docs) = json_stream(chunk.text)
        && docs.iter().all(|(_, d)| !has_items(&d.value))
    {
        return documents(file, chunk, options, docs);
    }
    let saphyr = saphyr_options(chunk.text.len(), options.max_depth);
    let docs =
        match serde_saphyr::from_multiple_with_options::<Spanned<DocRoot>>(chunk.text, saphyr) {
            Ok(docs) => docs
                .into_iter()
                .map(|doc| (line_of(&doc), doc.value))
                .collect(),
            Err(err) => {
                let looks_like_json = chunk.text.trim_start().starts_with(['{', '[']);
                let (message, line) = match looks_like_json.then(|| json_stream(chunk.text)) {
                    // Concatenated JSON objects, which kubectl accepts, are not YAML.
                    Some(Ok(docs)) => return documents(file, chunk, options, docs),
                    Some(Err((message, line))) => {
                        (format!("cannot parse JSON: {message}"), Some(line))
                    }
                    None => {
                        let (message, line) = yaml_error(&err);
                        (format!("cannot parse YAML: {message}"), line)
                    }
                };
                let line = chunk
                    .first_line
                    .saturating_add(line.unwrap_or(1).saturating_sub(1));
                let mut output = ChunkOutput::default();
                output
                    .diagnostics
                    .push(Diagnostic::error(message).at(Source::new(file.clone(), line)));
                return output;
            }
        };
    documents(file, chunk, options, docs)
}

/// Lines of the values of a JSON stream, counted incrementally: a stream may hold many values.
struct StreamLines {
    counted_to: usize,
    line: usize,
}

impl Default for StreamLines {
    fn default() -> Self {
        StreamLines {
            counted_to: 0,
            line: 1,
        }
    }
}

impl StreamLines {
    /// The byte offset and 1-based line where the next value starts, given the stream's
    /// position after the previous one.
    fn next_value(&mut self, text: &str, position: usize) -> (usize, usize) {
        // JSON's white space only: a value may not follow anything else, and what does not
        // skip here is then the stream's error to report (or the direct route's to give up on).
        let skipped = text.as_bytes()[position..]
            .iter()
            .take_while(|&&b| is_json_whitespace(b))
            .count();
        let value_start = position + skipped;
        self.line += count_newlines(&text.as_bytes()[self.counted_to..value_start]);
        self.counted_to = value_start;
        (value_start, self.line)
    }
}

/// A stream of JSON values (`{..} {..}`), each with the line it starts on.
fn json_stream(text: &str) -> Result<Vec<(u32, DocRoot)>, (String, u32)> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut docs = Vec::new();
    let mut lines = StreamLines::default();
    loop {
        let (_, line) = lines.next_value(text, stream.byte_offset());
        match stream.next() {
            None => return Ok(docs),
            Some(Ok(value)) => docs.push((
                line_u32(line),
                DocRoot {
                    value,
                    item_lines: Vec::new(),
                },
            )),
            Some(Err(err)) => {
                let message = err.to_string();
                let message = message
                    .rfind(" at line ")
                    .map_or(message.as_str(), |i| &message[..i]);
                return Err((message.to_string(), line_u32(err.line()).max(1)));
            }
        }
    }
}

/// The JSON documents of a chunk decoded without building a `Value` per object (see
/// [`head`]), streaming one document after the other. `None` when the chunk must go the
/// generic way: it is not a JSON stream, or a document has items whose lines only the
/// YAML parser records.
///
/// `lines` holds the chunk's per-node lines once a conversion error asks for them; `sink` is
/// told of each deferred slice ([`LoadOptions::slice_sink`]). With a sink, the chunk's heads
/// are scanned and its slices told before any other document is decoded: the thread that
/// converts slices starts at once instead of after whatever comes first (`dra gen` writes
/// the nodes before the slices, and decoding gpu-nic's 64 nodes kept the converter idle
/// 0.2-0.3 ms). The answer is the same, in the same order.
fn json_direct(
    file: &Arc<str>,
    source: &Arc<String>,
    chunk: Chunk<'_>,
    options: &LoadOptions,
    lines: &OnceLock<Option<Vec<LineTree>>>,
    sink: Option<&SliceSink>,
) -> Option<ChunkOutput> {
    let mut output = ChunkOutput::default();
    let mut documents = ScannedDocuments::new(chunk.text, options.defer_slices);
    let ctx = |doc_index| DocContext {
        file,
        chunk,
        options,
        doc_index,
        lines,
    };
    match sink.filter(|_| options.defer_slices) {
        Some(sink) => {
            // Each entry holds a deferred slice's metadata (most of an entry's 0.8 KB):
            // grown by doubling, the list was copied eight times for gpu-nic's 451 documents
            // (0.27 M instructions) and its old buffers were fresh memory the loader's
            // objects did not reuse at once. Room for a document per KiB of text: all of
            // gpu-nic's (1.3 KiB each on average); a stream of smaller ones grows it once or
            // twice (scheduler-perf's, 0.5 KiB each). Room unused is never touched.
            let mut scanned = Vec::with_capacity(chunk.text.len() / 1024 + 16);
            for document in documents.by_ref() {
                let document = document?;
                let slice = deferred_slice(&document, source);
                if let Some(slice) = &slice {
                    sink.tell(slice);
                }
                scanned.push((document, slice));
            }
            for (doc_index, (document, slice)) in scanned.into_iter().enumerate() {
                ctx(doc_index).scanned(document, slice, &mut output)?;
            }
        }
        None => {
            for (doc_index, document) in documents.enumerate() {
                let document = document?;
                let slice = options
                    .defer_slices
                    .then(|| deferred_slice(&document, source))
                    .flatten();
                ctx(doc_index).scanned(document, slice, &mut output)?;
            }
        }
    }
    Some(output)
}

/// A document of a JSON stream as [`ScannedDocuments`] found it.
struct ScannedDocument<'t> {
    head: Head<'t>,
    /// The document's text.
    text: &'t str,
    /// The line it starts on, within its chunk.
    line: u32,
    /// The end of `text` was taken from where its line ends
    /// ([`SliceJson::end_unchecked`]).
    end_unchecked: bool,
}

/// The documents of a JSON stream, each with its head scanned ([`head`]): `None` for a
/// document the chunk must go the generic way for (outside what the scanner reads and what
/// serde reads as a head, or with items whose lines only the YAML parser records).
struct ScannedDocuments<'t> {
    text: &'t str,
    /// Scan to the line's end (for deferred slices, whose `spec` need not be read here).
    to_line_end: bool,
    stream_lines: StreamLines,
    line_breaks: LineBreaks,
    position: usize,
}

impl<'t> ScannedDocuments<'t> {
    fn new(text: &'t str, to_line_end: bool) -> Self {
        ScannedDocuments {
            text,
            to_line_end,
            stream_lines: StreamLines::default(),
            line_breaks: LineBreaks::default(),
            position: 0,
        }
    }
}

impl<'t> Iterator for ScannedDocuments<'t> {
    type Item = Option<ScannedDocument<'t>>;

    fn next(&mut self) -> Option<Self::Item> {
        let text = self.text;
        let (value_start, line) = self.stream_lines.next_value(text, self.position);
        let rest = &text[value_start..];
        if rest.is_empty() {
            return None;
        }
        // Every document's text is read again, checked (serde, or the slice reader for a
        // deferred slice, which goes this usual way on an error): the head scan only skips
        // the values it does not need.
        let scanned = if self.to_line_end {
            scan_object_to_line_end(rest, &mut self.line_breaks)
        } else {
            scan_object(rest, true).map(|(head, length)| (head, length, false))
        };
        let (head, length, end_unchecked) = match scanned {
            Some(scanned) => scanned,
            // Outside what the scanner reads: serde decides, as a stream would.
            None => {
                let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Head>();
                match stream.next() {
                    Some(Ok(head)) => (head, stream.byte_offset(), false),
                    _ => return Some(None),
                }
            }
        };
        if head.has_items {
            return Some(None);
        }
        self.position = value_start + length;
        Some(Some(ScannedDocument {
            head,
            text: &text[value_start..self.position],
            line: line_u32(line),
            end_unchecked,
        }))
    }
}

/// A ResourceSlice (of the current version) kept as its text, `text` within `source`, with
/// its metadata decoded; `None` when the metadata does not decode (the document then takes
/// the usual route, which reports it). ResourceSlices have no API-server defaults, so the
/// text is all there is.
///
/// A document whose end the scan took from its line (`end_unchecked`) is kept so marked. Any
/// other route for it decodes its text in full, which confirms the end or fails (and the
/// chunk then goes the generic way).
fn deferred_slice(document: &ScannedDocument<'_>, source: &Arc<String>) -> Option<SliceJson> {
    let ScannedDocument {
        head,
        text,
        end_unchecked,
        ..
    } = document;
    if !head.is_object || !head.names_a_slice() {
        return None;
    }
    let metadata = match head.slice_metadata {
        Some(found) => serde_json::from_str::<Option<ObjectMeta>>(found).ok()?,
        None => serde_json::from_str::<MetadataOnly>(text).ok()?.0,
    };
    // Every document's text is a part of its input's; an address outside it would be a
    // bug here, answered by the usual route rather than a wrong text.
    let start = (text.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
    let json = SliceJson::new(
        metadata.unwrap_or_default(),
        Arc::clone(source),
        start..start + text.len(),
    )?;
    Some(if *end_unchecked {
        json.with_end_unchecked()
    } else {
        json
    })
}

/// A plain object of a loaded kind decoded straight from its text, defaults applied;
/// `None` for anything [`DocContext::object`] has to look at (lists, missing or old
/// versions, unknown kinds, type errors).
fn direct_object(head: &Head<'_>, text: &str) -> Option<AnyObject> {
    let (Some(api_version), Some(kind)) = (head.api_version.as_deref(), head.kind.as_deref())
    else {
        return None;
    };
    // The cases `documents` and `DocContext::object` treat specially.
    if !head.is_object
        || api_version.is_empty()
        || kind == "List"
        || OLD_RESOURCE_VERSIONS.contains(&api_version) && DRA_KINDS.contains(&kind)
    {
        return None;
    }
    // Pods and nodes of the common shape without serde's visitor per node, which was most
    // of a small stream's load; anything else serde decodes as before.
    let read = match (api_version, kind) {
        ("v1", "Pod") => common_shapes::read_pod(text).map(AnyObject::Pod),
        ("v1", "Node") => common_shapes::read_node(text).map(AnyObject::Node),
        _ => None,
    };
    let mut object = match read {
        Some(object) => object,
        None => decode_json(api_version, kind, text)??,
    };
    apply_object_defaults(&mut object);
    release_spare_capacity(&mut object);
    Some(object)
}

/// Gives back the spare capacity of the lists that dominate a large input's memory. serde
/// grows a list without knowing its length, so a pod's one container sits in room for four
/// (2.3 KB instead of 0.6) and a slice's devices in up to twice their size; the malloc'd
/// tail returned here is reused by the objects decoded next instead of fresh pages, which
/// are expensive to touch. Contents are unchanged. Only this path needs it: decoding from a
/// `Value` knows every list's length and allocates it exactly.
fn release_spare_capacity(object: &mut AnyObject) {
    match object {
        AnyObject::Pod(pod) => {
            if let Some(spec) = pod.spec.as_mut() {
                spec.containers.shrink_to_fit();
                if let Some(init) = spec.init_containers.as_mut() {
                    init.shrink_to_fit();
                }
            }
        }
        AnyObject::ResourceSlice(slice) => {
            if let Some(devices) = slice.spec.devices.as_mut() {
                devices.shrink_to_fit();
            }
        }
        _ => {}
    }
}

/// Turns the documents of a chunk (with their chunk-relative lines) into objects
/// and diagnostics.
fn documents(
    file: &Arc<str>,
    chunk: Chunk<'_>,
    options: &LoadOptions,
    docs: Vec<(u32, DocRoot)>,
) -> ChunkOutput {
    let mut output = ChunkOutput::default();
    let lines = OnceLock::new();
    for (doc_index, (relative_line, root)) in docs.into_iter().enumerate() {
        let ctx = DocContext {
            file,
            chunk,
            options,
            doc_index,
            lines: &lines,
        };
        let doc_line = ctx.at_line(relative_line);
        ctx.document(root, doc_line, &mut output);
    }
    output
}

fn line_of<T>(spanned: &Spanned<T>) -> u32 {
    u32::try_from(spanned.referenced.line())
        .unwrap_or(u32::MAX)
        .max(1)
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// `kind: List` or a typed list (`DeviceClassList`) with `items`.
fn is_list(value: &Value) -> bool {
    match str_field(value, "kind") {
        Some("List") => true,
        Some(kind) => kind.ends_with("List") && value.get("items").is_some_and(Value::is_array),
        None => false,
    }
}

/// Group versions of resource.k8s.io that are not read (objects must be v1).
const OLD_RESOURCE_VERSIONS: &[&str] = &[
    "resource.k8s.io/v1alpha3",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1beta2",
];

const DRA_KINDS: &[&str] = &[
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "DeviceTaintRule",
];

/// One document of a chunk, with what is needed to report positions in it.
struct DocContext<'c> {
    file: &'c Arc<str>,
    chunk: Chunk<'c>,
    options: &'c LoadOptions,
    doc_index: usize,
    /// Per-node lines of the chunk's documents, parsed only when a conversion error
    /// needs them (`None` inside when that parse fails).
    lines: &'c OnceLock<Option<Vec<LineTree>>>,
}

impl DocContext<'_> {
    fn source(&self, line: u32) -> Source {
        Source::new(self.file.clone(), line)
    }

    /// Converts a line relative to the chunk into a line of the input.
    fn at_line(&self, relative: u32) -> u32 {
        self.chunk
            .first_line
            .saturating_add(relative.saturating_sub(1))
    }

    /// Decodes a document of a JSON stream ([`json_direct`]): `slice` is what it is as a
    /// deferred slice, if it is one. `None` when the chunk must go the generic way.
    fn scanned(
        &self,
        document: ScannedDocument<'_>,
        slice: Option<SliceJson>,
        output: &mut ChunkOutput,
    ) -> Option<()> {
        let doc_line = self.at_line(document.line);
        let object = match slice {
            Some(slice) => Item::SliceJson(Box::new(slice)),
            None => match direct_object(&document.head, document.text) {
                Some(object) => object.into(),
                None => {
                    // Everything else (errors included) as before, from the document's
                    // `Value`.
                    let value = serde_json::from_str::<Value>(document.text).ok()?;
                    let root = DocRoot {
                        value,
                        item_lines: Vec::new(),
                    };
                    self.document(root, doc_line, output);
                    return Some(());
                }
            },
        };
        output.objects.push(Decoded {
            source: self.source(doc_line),
            object,
        });
        Some(())
    }

    /// Decodes one document starting on `doc_line`.
    fn document(&self, root: DocRoot, doc_line: u32, output: &mut ChunkOutput) {
        match root.value {
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    let line = root
                        .item_lines
                        .get(i)
                        .map_or(doc_line, |&l| self.at_line(l));
                    self.object(item, vec![Step::Index(i)], line, None, output);
                }
            }
            Value::Object(_) if is_list(&root.value) => self.list(root, doc_line, output),
            Value::Object(_) => self.object(root.value, Vec::new(), doc_line, None, output),
            other => output.diagnostics.push(
                Diagnostic::error(format!(
                    "expected a Kubernetes object (a mapping with apiVersion and kind), found {}",
                    describe(&other)
                ))
                .at(self.source(doc_line)),
            ),
        }
    }

    fn line_tree(&self) -> Option<&LineTree> {
        self.lines
            .get_or_init(|| {
                let options = saphyr_options(self.chunk.text.len(), self.options.max_depth);
                serde_saphyr::from_multiple_with_options(self.chunk.text, options).ok()
            })
            .as_ref()
            .and_then(|trees| trees.get(self.doc_index))
    }

    fn list(&self, root: DocRoot, doc_line: u32, output: &mut ChunkOutput) {
        let Value::Object(mut map) = root.value else {
            return;
        };
        let list_kind = map
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let list_api_version = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        // A typed list (`DeviceClassList`) may omit kind and apiVersion in its items.
        let item_type = (list_kind != "List").then(|| {
            (
                list_api_version.clone(),
                list_kind.trim_end_matches("List").to_string(),
            )
        });
        match map.remove("items") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    let line = root
                        .item_lines
                        .get(i)
                        .map_or(doc_line, |&l| self.at_line(l));
                    let path = vec![Step::Key("items".to_string()), Step::Index(i)];
                    if item.get("kind").and_then(Value::as_str).is_some_and(|k| {
                        k == "List" || k.ends_with("List") && item.get("items").is_some()
                    }) {
                        output.diagnostics.push(
                            Diagnostic::error("a List inside a List is not supported")
                                .at(self.source(line)),
                        );
                        continue;
                    }
                    self.object(item, path, line, item_type.as_ref(), output);
                }
            }
            Some(other) => output.diagnostics.push(
                Diagnostic::error(format!("items must be a list, found {}", describe(&other)))
                    .at(self.source(doc_line))
                    .field("items"),
            ),
        }
    }

    /// Decodes one object found at `path` in the document.
    fn object(
        &self,
        value: Value,
        path: Vec<Step>,
        line: u32,
        item_type: Option<&(String, String)>,
        output: &mut ChunkOutput,
    ) {
        let source = self.source(line);
        if !value.is_object() {
            output.diagnostics.push(
                Diagnostic::error(format!(
                    "expected a Kubernetes object (a mapping with apiVersion and kind), found {}",
                    describe(&value)
                ))
                .at(source),
            );
            return;
        }
        let api_version = str_field(&value, "apiVersion")
            .map(str::to_string)
            .or_else(|| item_type.map(|(v, _)| v.clone()));
        let kind = str_field(&value, "kind")
            .map(str::to_string)
            .or_else(|| item_type.map(|(_, k)| k.clone()));
        let (api_version, kind) = match (api_version, kind) {
            (Some(a), Some(k)) if !a.is_empty() && !k.is_empty() => (a, k),
            (a, k) => {
                let missing = match (
                    a.as_deref().unwrap_or_default(),
                    k.as_deref().unwrap_or_default(),
                ) {
                    ("", "") => "apiVersion and kind",
                    ("", _) => "apiVersion",
                    _ => "kind",
                };
                output.diagnostics.push(
                    Diagnostic::error(format!("object has no {missing}; cannot tell what it is"))
                        .at(source),
                );
                return;
            }
        };
        let object_ref = value_object_ref(&value, &kind);
        if OLD_RESOURCE_VERSIONS.contains(&api_version.as_str())
            && DRA_KINDS.contains(&kind.as_str())
        {
            output.diagnostics.push(
                Diagnostic::error(format!(
                    "{api_version} is not supported: dra reads resource.k8s.io/v1 (Kubernetes 1.34 and later); \
                     convert the object (kubectl convert --output-version resource.k8s.io/v1) or re-export it \
                     from a cluster that serves resource.k8s.io/v1"
                ))
                .at(source)
                .on(object_ref),
            );
            return;
        }
        match decode(&api_version, &kind, value) {
            None => {
                let message = match supported_kinds().iter().find(|k| k.kind == kind) {
                    Some(known) => format!(
                        "{kind} in {api_version} is not supported (dra reads {}); skipped",
                        known.api_version
                    ),
                    None => format!("unknown kind {kind} (apiVersion {api_version}); skipped"),
                };
                output
                    .diagnostics
                    .push(Diagnostic::warning(message).at(source).on(object_ref));
            }
            Some(Ok(mut object)) => {
                apply_object_defaults(&mut object);
                output.objects.push(Decoded {
                    source,
                    object: object.into(),
                });
            }
            Some(Err(err)) => {
                let steps: Vec<Step> = err
                    .path()
                    .iter()
                    .filter_map(|segment| match segment {
                        serde_path_to_error::Segment::Seq { index } => Some(Step::Index(*index)),
                        serde_path_to_error::Segment::Map { key } => Some(Step::Key(key.clone())),
                        serde_path_to_error::Segment::Enum { variant } => {
                            Some(Step::Key(variant.clone()))
                        }
                        serde_path_to_error::Segment::Unknown => None,
                    })
                    .collect();
                let mut full = path;
                full.extend(steps.iter().cloned());
                let error_line = self
                    .line_tree()
                    .map_or(line, |tree| self.at_line(tree.line_at(&full)));
                let mut diagnostic = Diagnostic::error(err.inner().to_string())
                    .at(self.source(error_line))
                    .on(object_ref);
                if !steps.is_empty() {
                    diagnostic = diagnostic.field(field_path(&steps));
                }
                output.diagnostics.push(diagnostic);
            }
        }
    }
}

/// Names an object from generic data (before it is typed).
fn value_object_ref(value: &Value, kind: &str) -> ObjectRef {
    let metadata = value.get("metadata");
    let name = metadata
        .and_then(|m| str_field(m, "name"))
        .unwrap_or_default();
    let namespaced = supported_kinds()
        .iter()
        .find(|k| k.kind == kind)
        .map(|k| k.namespaced);
    let namespace = metadata.and_then(|m| str_field(m, "namespace"));
    let namespace = match namespaced {
        Some(true) => Some(namespace.filter(|n| !n.is_empty()).unwrap_or("default")),
        Some(false) => None,
        None => namespace,
    };
    ObjectRef::new(kind, namespace, name)
}

/// Renders a path the way Kubernetes field errors do, quoting map keys that are
/// not plain identifiers: `spec.devices[3].attributes["gpu.example.com/model"]`.
pub(crate) fn field_path(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
            Step::Key(key)
                if !key.is_empty()
                    && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Key(key) => {
                out.push('[');
                out.push_str(&format!("{key:?}"));
                out.push(']');
            }
        }
    }
    out
}
