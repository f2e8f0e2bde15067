//! JSON Schema validation of tool arguments on the `jsonschema` crate: schemas are bounded, checked for
//! local-only `$ref`s, compiled once and cached (LRU keyed by a 128-bit hash of the schema); instances are
//! bounded (depth, string bytes, array length, object size, node count) and may not carry prototype keys,
//! because arguments are forwarded to JavaScript MCP servers.

use crate::registry::RegisteredTool;
use crate::validation::ValidationIssue;
use lru::LruCache;
use serde_json::Value;
use std::hash::{DefaultHasher, Hasher};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use thiserror::Error;

/// Keys an argument object may never carry anywhere (prototype pollution in JavaScript servers).
pub const FORBIDDEN_KEYS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// How error messages name the arguments object itself (a JSON Pointer `/` would mean the key `""`).
pub const ROOT_PATH: &str = "(root)";
/// Keywords whose values are data, not subschemas: a `$ref` key inside them is not a reference.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Longest message kept from one schema error, in bytes.
const MAX_ERROR_MESSAGE_BYTES: usize = 512;
/// How many schema errors one failure reports.
const MAX_REPORTED_ERRORS: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{name} = {value} is out of range: must be 1..={hard_cap}")]
pub struct LimitError {
    pub name: &'static str,
    pub value: usize,
    pub hard_cap: usize,
}

fn check_limit(name: &'static str, value: usize, hard_cap: usize) -> Result<(), LimitError> {
    if value == 0 || value > hard_cap { Err(LimitError { name, value, hard_cap }) } else { Ok(()) }
}

/// Bounds on schemas. Defaults and hard caps per the design: bytes 256 KiB (1 MiB), depth 64 (128),
/// keywords 10,000 (100,000), `$ref`s 128 (1,024), cache entries 256 (1,024).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaLimits {
    pub max_bytes: usize,
    pub max_depth: usize,
    /// Object keys across the whole schema (property names and keywords alike).
    pub max_keywords: usize,
    pub max_refs: usize,
    pub cache_entries: usize,
}

impl SchemaLimits {
    pub const HARD: SchemaLimits = SchemaLimits {
        max_bytes: 1024 * 1024,
        max_depth: 128,
        max_keywords: 100_000,
        max_refs: 1024,
        cache_entries: 1024,
    };

    pub fn validated(self) -> Result<Self, LimitError> {
        let h = SchemaLimits::HARD;
        check_limit("schema max_bytes", self.max_bytes, h.max_bytes)?;
        check_limit("schema max_depth", self.max_depth, h.max_depth)?;
        check_limit("schema max_keywords", self.max_keywords, h.max_keywords)?;
        check_limit("schema max_refs", self.max_refs, h.max_refs)?;
        check_limit("schema cache_entries", self.cache_entries, h.cache_entries)?;
        Ok(self)
    }
}

impl Default for SchemaLimits {
    fn default() -> Self {
        SchemaLimits {
            max_bytes: 256 * 1024,
            max_depth: 64,
            max_keywords: 10_000,
            max_refs: 128,
            cache_entries: 256,
        }
    }
}

/// Bounds on argument instances. Defaults (hard caps): depth 64 (128), string bytes 1 MiB (16 MiB),
/// array length 10,000 (1,000,000), object properties 10,000 (100,000), nodes 100,000 (1,000,000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceLimits {
    /// Containers on the deepest path; the arguments object itself is depth 1.
    pub max_depth: usize,
    pub max_string_bytes: usize,
    pub max_array_len: usize,
    pub max_object_properties: usize,
    /// Values in the whole instance (containers and scalars).
    pub max_nodes: usize,
}

impl InstanceLimits {
    pub const HARD: InstanceLimits = InstanceLimits {
        max_depth: 128,
        max_string_bytes: 16 * 1024 * 1024,
        max_array_len: 1_000_000,
        max_object_properties: 100_000,
        max_nodes: 1_000_000,
    };

    pub fn validated(self) -> Result<Self, LimitError> {
        let h = InstanceLimits::HARD;
        check_limit("instance max_depth", self.max_depth, h.max_depth)?;
        check_limit("instance max_string_bytes", self.max_string_bytes, h.max_string_bytes)?;
        check_limit("instance max_array_len", self.max_array_len, h.max_array_len)?;
        check_limit("instance max_object_properties", self.max_object_properties, h.max_object_properties)?;
        check_limit("instance max_nodes", self.max_nodes, h.max_nodes)?;
        Ok(self)
    }
}

impl Default for InstanceLimits {
    fn default() -> Self {
        InstanceLimits {
            max_depth: 64,
            max_string_bytes: 1024 * 1024,
            max_array_len: 10_000,
            max_object_properties: 10_000,
            max_nodes: 100_000,
        }
    }
}

/// What happens to a tool that declares no `parameters`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingSchema {
    /// Arguments still pass the instance bounds; no schema check.
    #[default]
    Allow,
    /// The call is blocked with `validation_failed`.
    Reject,
}

/// Why a schema was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    #[error("schema is {bytes} bytes, over the limit of {limit}")]
    TooLarge { bytes: usize, limit: usize },
    #[error("schema nesting is deeper than {limit}")]
    TooDeep { limit: usize },
    #[error("schema has more than {limit} keywords/properties")]
    TooManyKeywords { limit: usize },
    #[error("schema has more than {limit} $ref")]
    TooManyRefs { limit: usize },
    #[error("schema {keyword} {target:?} is not local: only \"#...\" references are accepted")]
    RemoteRef { keyword: &'static str, target: String },
    #[error("schema is not a JSON Schema object or boolean")]
    NotASchema,
    #[error("schema does not compile: {0}")]
    Invalid(String),
}

/// 128-bit content hash of a schema, computed once at registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SchemaKey(u128);

impl SchemaKey {
    /// Hashes the schema structurally (iteratively: no recursion on deep input).
    pub fn of(schema: &Value) -> Self {
        let mut a = DefaultHasher::new();
        let mut b = DefaultHasher::new();
        b.write_u64(0x9e37_79b9_7f4a_7c15);
        let mut stack: Vec<&Value> = vec![schema];
        while let Some(v) = stack.pop() {
            let mut feed = |bytes: &[u8]| {
                a.write(bytes);
                b.write(bytes);
            };
            match v {
                Value::Null => feed(b"n"),
                Value::Bool(x) => feed(if *x { b"t" } else { b"f" }),
                Value::Number(n) => {
                    feed(b"#");
                    feed(n.to_string().as_bytes());
                    feed(b";");
                }
                Value::String(s) => {
                    feed(b"s");
                    feed(&(s.len() as u64).to_le_bytes());
                    feed(s.as_bytes());
                }
                Value::Array(items) => {
                    feed(b"[");
                    feed(&(items.len() as u64).to_le_bytes());
                    stack.extend(items.iter().rev());
                }
                Value::Object(map) => {
                    feed(b"{");
                    feed(&(map.len() as u64).to_le_bytes());
                    for (k, _) in map.iter() {
                        feed(&(k.len() as u64).to_le_bytes());
                        feed(k.as_bytes());
                    }
                    stack.extend(map.values().rev());
                }
            }
        }
        SchemaKey((u128::from(a.finish()) << 64) | u128::from(b.finish()))
    }
}

type Compiled = Result<jsonschema::Validator, SchemaError>;

/// Where a registered tool finds its compiled schema without the validator's cache (see
/// [`RegisteredTool`]): the validator's id (its limits decide what compiles) and a weak reference to
/// the cache's slot, so the cache's bound still holds (an evicted schema is compiled again).
pub(crate) struct ToolSchemaSlot {
    validator: u64,
    slot: Weak<OnceLock<Compiled>>,
}

/// Ids of validators, so a tool's slot is only used by the validator that filled it.
static NEXT_VALIDATOR_ID: AtomicU64 = AtomicU64::new(1);

/// Validates arguments against tool schemas, compiling each distinct schema once.
pub struct SchemaValidator {
    id: u64,
    schema_limits: SchemaLimits,
    instance_limits: InstanceLimits,
    missing: MissingSchema,
    cache: Mutex<LruCache<SchemaKey, Arc<OnceLock<Compiled>>>>,
    compiles: AtomicU64,
}

impl Default for SchemaValidator {
    fn default() -> Self {
        SchemaValidator::build(SchemaLimits::default(), InstanceLimits::default(), MissingSchema::default())
    }
}

impl SchemaValidator {
    pub fn new(
        schema_limits: SchemaLimits,
        instance_limits: InstanceLimits,
        missing: MissingSchema,
    ) -> Result<Self, LimitError> {
        Ok(SchemaValidator::build(schema_limits.validated()?, instance_limits.validated()?, missing))
    }

    fn build(schema_limits: SchemaLimits, instance_limits: InstanceLimits, missing: MissingSchema) -> Self {
        let entries = NonZeroUsize::new(schema_limits.cache_entries).unwrap_or(NonZeroUsize::MIN);
        SchemaValidator {
            id: NEXT_VALIDATOR_ID.fetch_add(1, Ordering::Relaxed),
            schema_limits,
            instance_limits,
            missing,
            cache: Mutex::new(LruCache::new(entries)),
            compiles: AtomicU64::new(0),
        }
    }

    pub fn schema_limits(&self) -> SchemaLimits {
        self.schema_limits
    }

    pub fn instance_limits(&self) -> InstanceLimits {
        self.instance_limits
    }

    /// How many schemas were compiled so far (a cache hit compiles nothing).
    pub fn compile_count(&self) -> u64 {
        self.compiles.load(Ordering::Relaxed)
    }

    /// How many compiled schemas are cached now.
    pub fn cached_schemas(&self) -> usize {
        self.cache.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Checks a schema against the bounds and compiles it, without caching (for hosts that vet tool
    /// manifests or upstream tools before registering them).
    pub fn check_schema(&self, schema: &Value) -> Result<(), SchemaError> {
        self.compile(schema).map(|_| ())
    }

    /// Validates a registered tool's arguments.
    /// The tool keeps a handle on the compiled schema, so after its first call the validator's cache
    /// (mutex, hash) is not touched: an uncontended read lock and a weak upgrade instead.
    pub fn validate_tool(&self, tool: &RegisteredTool, arguments: &Value) -> Result<(), ValidationIssue> {
        let schema = tool.spec().parameters.as_ref();
        match (schema, tool.schema_key) {
            (Some(schema), Some(key)) => {
                let kept = tool.compiled.read().ok().and_then(|kept| {
                    kept.as_ref()
                        .filter(|kept| kept.validator == self.id)
                        .and_then(|kept| kept.slot.upgrade())
                });
                let slot = match kept {
                    Some(slot) => slot,
                    None => {
                        let slot = self.slot(key)?;
                        if let Ok(mut kept) = tool.compiled.write() {
                            *kept = Some(ToolSchemaSlot { validator: self.id, slot: Arc::downgrade(&slot) });
                        }
                        slot
                    }
                };
                check_instance(arguments, &self.instance_limits)?;
                self.validate_in(&slot, schema, arguments)
            }
            (Some(schema), None) => self.validate_keyed(SchemaKey::of(schema), schema, arguments),
            (None, _) => self.validate_without_schema(arguments),
        }
    }

    /// Validates arguments against a schema (hashing it: prefer `validate_tool` on hot paths).
    pub fn validate(&self, schema: &Value, arguments: &Value) -> Result<(), ValidationIssue> {
        self.validate_keyed(SchemaKey::of(schema), schema, arguments)
    }

    fn validate_without_schema(&self, arguments: &Value) -> Result<(), ValidationIssue> {
        check_instance(arguments, &self.instance_limits)?;
        match self.missing {
            MissingSchema::Allow => Ok(()),
            MissingSchema::Reject => Err(ValidationIssue::new("tool declares no parameters schema")),
        }
    }

    fn validate_keyed(
        &self,
        key: SchemaKey,
        schema: &Value,
        arguments: &Value,
    ) -> Result<(), ValidationIssue> {
        check_instance(arguments, &self.instance_limits)?;
        let slot = self.slot(key)?;
        self.validate_in(&slot, schema, arguments)
    }

    fn validate_in(
        &self,
        slot: &OnceLock<Compiled>,
        schema: &Value,
        arguments: &Value,
    ) -> Result<(), ValidationIssue> {
        let compiled = slot.get_or_init(|| self.compile(schema));
        let validator = match compiled {
            Ok(v) => v,
            Err(e) => return Err(ValidationIssue::new(format!("tool schema rejected: {e}"))),
        };
        if validator.is_valid(arguments) {
            return Ok(());
        }
        Err(describe_errors(validator, arguments))
    }

    fn slot(&self, key: SchemaKey) -> Result<Arc<OnceLock<Compiled>>, ValidationIssue> {
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| ValidationIssue::new("schema cache unavailable (poisoned lock)"))?;
        if let Some(slot) = cache.get(&key) {
            return Ok(slot.clone());
        }
        let slot = Arc::new(OnceLock::new());
        cache.put(key, slot.clone());
        Ok(slot)
    }

    fn compile(&self, schema: &Value) -> Compiled {
        check_schema_bounds(schema, &self.schema_limits)?;
        self.compiles.fetch_add(1, Ordering::Relaxed);
        jsonschema::options()
            .build(schema)
            .map_err(|e| SchemaError::Invalid(truncate(&e.to_string(), MAX_ERROR_MESSAGE_BYTES)))
    }
}

/// The refusal's message and details. Built in place (one message string, each error formatted once
/// into a buffer of its own size): a refused call should cost less than an allowed one.
fn describe_errors(validator: &jsonschema::Validator, arguments: &Value) -> ValidationIssue {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(128);
    let mut first_path = None;
    let mut details = Vec::new();
    for error in validator.iter_errors(arguments).take(MAX_REPORTED_ERRORS) {
        let path = match error.instance_path().as_str() {
            "" => ROOT_PATH,
            p => p,
        };
        let mut message = String::with_capacity(64);
        let _ = write!(message, "{error}");
        truncate_in_place(&mut message, MAX_ERROR_MESSAGE_BYTES);
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(path);
        text.push_str(": ");
        text.push_str(&message);
        first_path.get_or_insert_with(|| path.to_owned());
        let mut entry = serde_json::Map::new();
        entry.insert("path".to_owned(), Value::String(path.to_owned()));
        entry.insert("message".to_owned(), Value::String(message));
        details.push(Value::Object(entry));
    }
    if text.is_empty() {
        text = format!("{ROOT_PATH}: arguments do not match the schema");
    }
    ValidationIssue { message: text, path: first_path, details: Some(Value::Array(details)) }
}

/// [`truncate`] without a copy.
fn truncate_in_place(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str("...");
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// Schema bounds: depth first (iteratively, so a pathological schema cannot exhaust the stack), then
/// keywords and `$ref`s, then the serialized size.
fn check_schema_bounds(schema: &Value, limits: &SchemaLimits) -> Result<(), SchemaError> {
    if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
        return Err(SchemaError::NotASchema);
    }
    let mut keywords = 0usize;
    let mut refs = 0usize;
    // (value, depth, inside a data keyword such as `const`)
    let mut stack: Vec<(&Value, usize, bool)> = vec![(schema, 1, false)];
    while let Some((value, depth, data)) = stack.pop() {
        match value {
            Value::Object(map) => {
                if depth > limits.max_depth {
                    return Err(SchemaError::TooDeep { limit: limits.max_depth });
                }
                keywords += map.len();
                if keywords > limits.max_keywords {
                    return Err(SchemaError::TooManyKeywords { limit: limits.max_keywords });
                }
                for (key, child) in map {
                    let keyword = match key.as_str() {
                        "$ref" => Some("$ref"),
                        "$dynamicRef" => Some("$dynamicRef"),
                        "$recursiveRef" => Some("$recursiveRef"),
                        _ => None,
                    };
                    if let (false, Some(keyword), Value::String(target)) = (data, keyword, child) {
                        refs += 1;
                        if refs > limits.max_refs {
                            return Err(SchemaError::TooManyRefs { limit: limits.max_refs });
                        }
                        // "" and "#..." stay in this document; anything else names another resource.
                        if !(target.is_empty() || target.starts_with('#')) {
                            return Err(SchemaError::RemoteRef { keyword, target: truncate(target, 200) });
                        }
                    }
                    if matches!(child, Value::Object(_) | Value::Array(_)) {
                        let child_is_data = data || DATA_KEYWORDS.contains(&key.as_str());
                        stack.push((child, depth + 1, child_is_data));
                    }
                }
            }
            Value::Array(items) => {
                if depth > limits.max_depth {
                    return Err(SchemaError::TooDeep { limit: limits.max_depth });
                }
                for child in items {
                    if matches!(child, Value::Object(_) | Value::Array(_)) {
                        stack.push((child, depth + 1, data));
                    }
                }
            }
            _ => {}
        }
    }
    let bytes = serde_json::to_vec(schema).map(|v| v.len()).unwrap_or(usize::MAX);
    if bytes > limits.max_bytes {
        return Err(SchemaError::TooLarge { bytes, limit: limits.max_bytes });
    }
    Ok(())
}

/// A bound broken at a JSON path (built on the way out, so the success path allocates nothing).
struct Breach {
    reversed_path: Vec<String>,
    message: String,
}

impl Breach {
    fn new(message: String) -> Self {
        Breach { reversed_path: Vec::new(), message }
    }

    fn under(mut self, segment: String) -> Self {
        self.reversed_path.push(segment);
        self
    }
}

fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Checks the instance bounds and forbidden keys.
pub fn check_instance(arguments: &Value, limits: &InstanceLimits) -> Result<(), ValidationIssue> {
    let mut nodes = 0usize;
    match walk(arguments, 1, limits, &mut nodes) {
        Ok(()) => Ok(()),
        Err(breach) => {
            let mut path = String::new();
            for seg in breach.reversed_path.iter().rev() {
                path.push('/');
                path.push_str(seg);
            }
            if path.is_empty() {
                path.push_str(ROOT_PATH);
            }
            Err(ValidationIssue {
                message: format!("{path}: {}", breach.message),
                path: Some(path),
                details: None,
            })
        }
    }
}

fn walk(value: &Value, depth: usize, limits: &InstanceLimits, nodes: &mut usize) -> Result<(), Breach> {
    *nodes += 1;
    if *nodes > limits.max_nodes {
        return Err(Breach::new(format!("arguments have more than {} values", limits.max_nodes)));
    }
    match value {
        Value::String(s) if s.len() > limits.max_string_bytes => Err(Breach::new(format!(
            "string of {} bytes is over the limit of {}",
            s.len(),
            limits.max_string_bytes
        ))),
        Value::Array(items) => {
            if depth > limits.max_depth {
                return Err(Breach::new(format!("nesting is deeper than {}", limits.max_depth)));
            }
            if items.len() > limits.max_array_len {
                return Err(Breach::new(format!(
                    "array of {} items is over the limit of {}",
                    items.len(),
                    limits.max_array_len
                )));
            }
            for (i, item) in items.iter().enumerate() {
                walk(item, depth + 1, limits, nodes).map_err(|b| b.under(i.to_string()))?;
            }
            Ok(())
        }
        Value::Object(map) => {
            if depth > limits.max_depth {
                return Err(Breach::new(format!("nesting is deeper than {}", limits.max_depth)));
            }
            if map.len() > limits.max_object_properties {
                return Err(Breach::new(format!(
                    "object of {} properties is over the limit of {}",
                    map.len(),
                    limits.max_object_properties
                )));
            }
            for (key, item) in map {
                if FORBIDDEN_KEYS.contains(&key.as_str()) {
                    return Err(
                        Breach::new(format!("key {key:?} is not allowed")).under(pointer_segment(key))
                    );
                }
                if key.len() > limits.max_string_bytes {
                    return Err(Breach::new(format!(
                        "key of {} bytes is over the limit of {}",
                        key.len(),
                        limits.max_string_bytes
                    )));
                }
                walk(item, depth + 1, limits, nodes).map_err(|b| b.under(pointer_segment(key)))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
