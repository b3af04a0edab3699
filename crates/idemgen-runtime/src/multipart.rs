//! `multipart/form-data` bodies: the parts `multer` reads, turned into the
//! type a spec's schema describes ([`Request::multipart_as`]) and into the
//! tree the fingerprint hashes ([`canonical_multipart`]).
//!
//! The body is already in memory, read up to [`crate::MAX_BODY_BYTES`]
//! within the in-flight budget: reading it holds `multer`'s buffer of it
//! and the typed value, each at most its size, and a file's bytes go into
//! its field without an intermediate JSON array.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

use crate::input::{Misfit, Scalar, Shape};
use crate::problem::ProblemKind;
use crate::{Reply, Request};

/// How a declared part is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Its text, as the JSON value its schema's type stands for.
    Text(Scalar),
    /// A JSON document (an object or array property, or an `encoding`
    /// whose `contentType` is JSON).
    Json,
    /// Its bytes, with the file name and content type sent (`format:
    /// binary`): a struct with the fields `file_name`, `content_type` and
    /// `bytes`.
    File,
}

/// A declared part of a multipart body: the table a generated handler
/// passes to [`Request::multipart_as`]. A part sent that is not in the
/// table is read as a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The part's name, which is also the serde name of its field.
    name: &'static str,
    reading: Reading,
    /// An array: the part repeated, named `name`, `name[]` or `name[0]`.
    many: bool,
    /// An object or array also taken as text parts in brackets
    /// (`file_link_data[create]`, `items[0][price]`), as Stripe reads
    /// them, each leaf's text read as this shape says.
    brackets: Option<&'static Shape>,
    /// An array declared joined in one text (`tags=a,b`): each part's
    /// text is split at this delimiter.
    delimiter: Option<char>,
}

impl Part {
    /// A part read as `reading`, sent once, under its own name only.
    const fn read_as(name: &'static str, reading: Reading) -> Part {
        Part {
            name,
            reading,
            many: false,
            brackets: None,
            delimiter: None,
        }
    }

    pub const fn text(name: &'static str, value: Scalar) -> Part {
        Part::read_as(name, Reading::Text(value))
    }

    pub const fn json(name: &'static str) -> Part {
        Part::read_as(name, Reading::Json)
    }

    pub const fn file(name: &'static str) -> Part {
        Part::read_as(name, Reading::File)
    }

    /// This part as an array: each part sent under its name is an item.
    pub const fn many(self) -> Part {
        Part { many: true, ..self }
    }

    /// This array's items also sent joined in one part's text, separated
    /// by `delimiter` (OpenAPI's `explode: false`: `,`; `spaceDelimited`:
    /// ` `; `pipeDelimited`: `|`): each part sent is split there, so
    /// `tags=a,b` and two parts `tags` are one list. An item cannot hold
    /// the delimiter, and an empty text is one empty item.
    pub const fn joined(self, delimiter: char) -> Part {
        Part {
            many: true,
            delimiter: Some(delimiter),
            ..self
        }
    }

    /// This JSON part also sent as text parts in brackets, one a leaf
    /// (`file_link_data[create]=true`, `file_link_data[metadata][k]=v`),
    /// read into `shape` as a form body's brackets are. A value is sent
    /// one way: a JSON part and brackets together are refused.
    pub const fn brackets(self, shape: &'static Shape) -> Part {
        Part {
            brackets: Some(shape),
            ..self
        }
    }

    /// Whether a part sent as `sent` is this one (or one of its items).
    fn takes(&self, sent: &str) -> bool {
        sent == self.name || (self.many && crate::input::is_item_of(sent, self.name))
    }

    /// Whether a part sent as `sent` is one of this part's brackets.
    fn takes_bracket(&self, sent: &str) -> bool {
        self.brackets.is_some() && sent.strip_prefix(self.name).is_some_and(|rest| rest.starts_with('['))
    }
}

/// One part as sent.
#[derive(Debug, Clone)]
struct Sent {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    bytes: Bytes,
}

/// Whether `headers` declare a `multipart/form-data` body.
pub(crate) fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("multipart/form-data"))
}

/// The parts of `body` in the order sent, or why it is not a
/// `multipart/form-data` body that can be read.
fn parts(headers: &HeaderMap, body: &Bytes) -> Result<Vec<Sent>, String> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type).map_err(|error| error.to_string())?;
    let whole = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(body.clone())]);
    let mut multipart = multer::Multipart::new(whole, boundary);
    let mut parts = Vec::new();
    while let Some(field) = at_once(multipart.next_field())? {
        let name = field
            .name()
            .ok_or("a part has no `name` in its `Content-Disposition`")?
            .to_string();
        let file_name = field.file_name().map(str::to_string);
        let content_type = field.content_type().map(ToString::to_string);
        let bytes = at_once(field.bytes())?;
        parts.push(Sent {
            name,
            file_name,
            content_type,
            bytes,
        });
    }
    Ok(parts)
}

/// What a `multer` future gives: it never waits, since the whole body is
/// its one chunk.
fn at_once<T>(future: impl Future<Output = multer::Result<T>>) -> Result<T, String> {
    match futures_util::FutureExt::now_or_never(future) {
        Some(read) => read.map_err(|error| error.to_string()),
        None => Err("the body ended inside a part".into()),
    }
}

fn is_json_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.to_ascii_lowercase().ends_with("+json")
}

/// A multipart body as the fingerprint hashes it: an object of the parts
/// by name (a name sent more than once: an array in the order sent), so
/// the boundary and the order of distinct parts are left out. A part with
/// a file name, or a content type other than text or JSON, is its file
/// name, content type and the SHA-256 of its bytes; a JSON part is its
/// canonical JSON; any other is its text, split at its delimiter where
/// `joined` names its list (`labels=a|b` is two parts `labels`, as
/// [`Part::joined`] reads it). `None`: not a multipart body this reader
/// takes, hashed as sent (and refused by `multipart_as`).
pub(crate) fn canonical_multipart(
    headers: &HeaderMap,
    body: &Bytes,
    joined: &[crate::JoinedList],
) -> Option<Vec<u8>> {
    let mut tree: Map<String, Value> = Map::new();
    for part in parts(headers, body).ok()? {
        // Split as `Part::joined` reads it: under its name, `name[]` or
        // `name[0]`.
        let delimiter = joined
            .iter()
            .filter(|_| part.file_name.is_none())
            .find(|list| crate::input::is_item_of(&part.name, list.name))
            .map(|list| list.delimiter);
        let content_type = part.content_type.as_deref();
        let plain = content_type.is_none_or(|content_type| {
            content_type
                .split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/plain"))
        });
        let hashed = |bytes: &[u8]| {
            let text = std::str::from_utf8(bytes).ok();
            let json = content_type
                .filter(|content_type| is_json_type(content_type))
                .and_then(|_| crate::input::exact_json_value(bytes));
            match (json, text) {
                (Some(json), _) if part.file_name.is_none() => serde_json::json!({ "json": json }),
                (None, Some(text)) if plain && part.file_name.is_none() => {
                    serde_json::json!({ "text": text })
                }
                _ => serde_json::json!({
                    "file_name": part.file_name,
                    "content_type": part.content_type,
                    // Lower-case hex, as the fingerprint's own digests.
                    "sha256": format!("{:x}", Sha256::digest(bytes)),
                }),
            }
        };
        // An item of a list (`labels[]`, `labels[0]`) is listed under the
        // list's name with the name it was sent as, in the order sent, as
        // the reader gathers `labels`, `labels[]` and `labels[0]` into one
        // list; any other part under its own name, as before.
        let (listed_as, sent_as) = match list_of(&part.name) {
            Some(list) => (list.to_string(), Some(part.name.as_str())),
            None => (part.name.clone(), None),
        };
        let values = items(delimiter, &part.bytes).into_iter().map(|item| {
            let mut value = hashed(&item);
            if let (Some(sent_as), Value::Object(fields)) = (sent_as, &mut value) {
                fields.insert("sent_as".into(), sent_as.into());
            }
            value
        });
        // Every name is an array, so one part is never taken for two.
        if let Value::Array(listed) = tree
            .entry(listed_as)
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            listed.extend(values);
        }
    }
    crate::canonical_json::canonicalize(&serde_json::to_vec(&Value::Object(tree)).ok()?).ok()
}

impl Request {
    /// The `multipart/form-data` body as `T`, each part read as `parts`
    /// says: text as the JSON value its schema's type stands for, JSON
    /// parts as JSON, files as their bytes with their file name and content
    /// type; a part not in `parts` is a string. A body declared as another
    /// media type (or with a `Content-Encoding`) is `415`; one whose parts
    /// do not fit `T` is a `400` problem naming the part.
    ///
    /// ```
    /// use idemgen_runtime::{Part, Request, Scalar};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct File {
    ///     file_name: Option<String>,
    ///     bytes: Vec<u8>,
    /// }
    /// #[derive(serde::Deserialize)]
    /// struct Upload {
    ///     purpose: String,
    ///     copies: u32,
    ///     file: File,
    /// }
    /// const PARTS: &[Part] = &[Part::text("copies", Scalar::Integer), Part::file("file")];
    /// let body = "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nlogo\r\n\
    ///             --b\r\nContent-Disposition: form-data; name=\"copies\"\r\n\r\n2\r\n\
    ///             --b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\
    ///             Content-Type: image/png\r\n\r\nPNG\r\n--b--\r\n";
    /// let mut request = Request {
    ///     body: body.into(),
    ///     ..Request::new(axum::http::Method::POST, "/files")
    /// };
    /// request.headers.insert("content-type", "multipart/form-data; boundary=b".parse().unwrap());
    /// let upload: Upload = request.multipart_as(PARTS).unwrap();
    /// assert_eq!((upload.purpose.as_str(), upload.copies), ("logo", 2));
    /// assert_eq!((upload.file.file_name.as_deref(), upload.file.bytes.as_slice()), (Some("a.png"), &b"PNG"[..]));
    /// ```
    pub fn multipart_as<T: DeserializeOwned>(&self, parts: &[Part]) -> Result<T, Reply> {
        // `multipart_read` says the body does not fit its schema.
        self.multipart_read(parts, &[], |why| {
            Reply::refusal(ProblemKind::InvalidBody, StatusCode::BAD_REQUEST, &why)
        })
    }

    /// [`Request::multipart_as`] answering as a JSON body is answered
    /// ([`Request::body_checked_as`]): parts that do not fit `T`, or a
    /// value that breaks one of the spec's validation keywords
    /// ([`crate::constraints`]), are `mismatch` (`422`, or `400` for an
    /// API that declares no `422`) naming the part's JSON pointer and the
    /// keyword, before anything is claimed.
    ///
    /// The keywords are checked on the JSON value each text or JSON part
    /// is decoded from (`copies=2` the integer 2, read as its schema's
    /// type says). A file part has no such value: no keyword applies to
    /// its bytes (a `maxLength` on a file is not a size limit here), but
    /// an array of files is counted by `minItems` and `maxItems`, and
    /// `uniqueItems` tells files apart by name, content type and bytes.
    pub fn multipart_checked_as<T: DeserializeOwned>(
        &self,
        parts: &[Part],
        mismatch: u16,
        constraints: &[crate::Constraint],
    ) -> Result<T, Reply> {
        self.multipart_read(parts, constraints, Reply::schema_mismatch(mismatch))
    }

    /// The multipart body as `T`, `constraints` checked first; `misfit`
    /// answers parts that do not fit (a body that cannot be read as
    /// multipart is `400`).
    fn multipart_read<T: DeserializeOwned>(
        &self,
        parts: &[Part],
        constraints: &[crate::Constraint],
        misfit: impl Fn(String) -> Reply,
    ) -> Result<T, Reply> {
        let coded = crate::input::content_coded(&self.headers);
        if let Some(why) = coded.or_else(|| {
            (!is_multipart(&self.headers))
                .then(|| "the body is not declared `multipart/form-data`".to_string())
        }) {
            return Err(Reply::refusal(
                ProblemKind::UnsupportedMediaType,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("{why}; send it as `multipart/form-data` with a boundary"),
            ));
        }
        let unreadable = |why: String| Reply::invalid_body("multipart", why);
        let sent = self::parts(&self.headers, &self.body).map_err(unreadable)?;
        let does_not_fit = |why: String| misfit(format!("the multipart body does not fit its schema: {why}"));
        let members = members(parts, sent).map_err(does_not_fit)?;
        if !constraints.is_empty() {
            crate::constraints::check(&checked_view(&members, constraints), constraints)
                .map_err(|violation| misfit(violation.to_string()))?;
        }
        let reader = MapDeserializer::<_, serde_json::Error>::new(members.into_iter());
        serde_path_to_error::deserialize(reader).map_err(|error| {
            match error.path().to_string().as_str() {
                "." => does_not_fit(error.inner().to_string()),
                path => does_not_fit(format!("`{path}`: {}", error.inner())),
            }
        })
    }
}

/// The parts as the validation keywords see them: an object of each
/// part's JSON value by name, a file standing as its file name and
/// content type (an object, which no string or number keyword reads). The
/// files of an array that `uniqueItems` holds also carry the SHA-256 of
/// their bytes, which tells two uploads apart; no other keyword reads
/// them, so no other file is hashed here.
fn checked_view(members: &[(String, Member)], constraints: &[crate::Constraint]) -> Value {
    let file = |sent: &Sent, digest: bool| {
        let mut file = serde_json::json!({
            "file_name": sent.file_name,
            "content_type": sent.content_type,
        });
        if digest {
            file["sha256"] = format!("{:x}", Sha256::digest(&sent.bytes)).into();
        }
        file
    };
    let unique = |name: &str| {
        constraints.iter().any(|constraint| {
            matches!(constraint.check, crate::Check::UniqueItems)
                && constraint.at.strip_prefix('/') == Some(&*crate::constraints::escape(name))
        })
    };
    let object = members
        .iter()
        .map(|(name, member)| {
            let value = match member {
                Member::Json(value) => value.clone(),
                Member::File(sent) => file(sent, false),
                Member::Files(sent) => {
                    let digest = unique(name);
                    Value::Array(sent.iter().map(|sent| file(sent, digest)).collect())
                }
            };
            (name.clone(), value)
        })
        .collect();
    Value::Object(object)
}

/// The parts sent, each as its field's value: the declared ones as
/// `parts` says (in the table's order), then the others as strings.
fn members(parts: &[Part], sent: Vec<Sent>) -> Result<Vec<(String, Member)>, String> {
    let mut taken: Vec<Vec<Sent>> = vec![Vec::new(); parts.len()];
    let mut bracketed: Vec<Vec<Sent>> = vec![Vec::new(); parts.len()];
    let mut others: Vec<Sent> = Vec::new();
    for part in sent {
        if let Some(at) = parts.iter().position(|declared| declared.takes(&part.name)) {
            taken[at].push(part);
        } else if let Some(at) = parts
            .iter()
            .position(|declared| declared.takes_bracket(&part.name))
        {
            bracketed[at].push(part);
        } else {
            others.push(part);
        }
    }
    let mut members = Vec::new();
    for ((part, sent), bracketed) in parts.iter().zip(taken).zip(bracketed) {
        if let Some(shape) = part.brackets.filter(|_| !bracketed.is_empty()) {
            if !sent.is_empty() {
                return Err(format!(
                    "the part `{}` is sent both whole and in brackets (`{}`); send it one way",
                    part.name, bracketed[0].name
                ));
            }
            members.push((part.name.to_string(), Member::Json(from_brackets(part.name, shape, &bracketed)?)));
            continue;
        }
        if sent.is_empty() {
            continue;
        }
        if !part.many && sent.len() > 1 {
            return Err(format!("the part `{}` is sent more than once", part.name));
        }
        let member = match part.reading {
            Reading::File if part.many => Member::Files(sent),
            Reading::File => Member::File(sent.into_iter().next().expect("one part")),
            reading => {
                let values = sent
                    .iter()
                    .flat_map(|one| items(part.delimiter, &one.bytes))
                    .map(|one| value(part.name, reading, &one))
                    .collect::<Result<Vec<_>, _>>()?;
                match part.many {
                    true => Member::Json(Value::Array(values)),
                    false => Member::Json(values.into_iter().next().expect("one part")),
                }
            }
        };
        members.push((part.name.to_string(), member));
    }
    for part in others {
        if members.iter().any(|(name, _)| *name == part.name) {
            return Err(format!("the part `{}` is sent more than once", part.name));
        }
        let text = value(&part.name, Reading::Text(Scalar::String), &part.bytes)?;
        members.push((part.name, Member::Json(text)));
    }
    Ok(members)
}

/// The list `name` is an item of (`labels` for `labels[]` or `labels[0]`).
fn list_of(name: &str) -> Option<&str> {
    let (list, index) = name.strip_suffix(']')?.rsplit_once('[')?;
    (!list.is_empty() && index.bytes().all(|byte| byte.is_ascii_digit())).then_some(list)
}

/// The items `bytes` holds: itself, or its text split at `delimiter`,
/// each item a slice of it (a text that is not UTF-8 is left whole, for
/// [`value`] to refuse).
fn items(delimiter: Option<char>, bytes: &Bytes) -> Vec<Bytes> {
    let text = std::str::from_utf8(bytes).ok();
    match delimiter.zip(text) {
        Some((delimiter, text)) => text
            .split(delimiter)
            .map(|item| bytes.slice_ref(item.as_bytes()))
            .collect(),
        None => vec![bytes.clone()],
    }
}

/// The value of `name` sent as text parts in brackets, read into `shape`
/// as a form body's brackets are (items in index order, a leaf named
/// twice refused); a part's name is read as sent, so `%5B` is not `[`.
fn from_brackets(name: &str, shape: &Shape, sent: &[Sent]) -> Result<Value, String> {
    let texts = sent
        .iter()
        .map(|part| {
            std::str::from_utf8(&part.bytes)
                .map(|text| (part.name.as_str(), text))
                .map_err(|_| format!("the part `{}` is not UTF-8 text", part.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    match crate::input::bracketed_value(name, shape, texts) {
        Ok(value) => Ok(value.unwrap_or(Value::Null)),
        Err(Misfit::Unreadable(error)) => Err(format!(
            "the parts `{name}[…]` cannot be read as nested brackets: {error}"
        )),
        Err(Misfit::Leaf { at, what, text }) => Err(format!("the part `{at}` {what}, not `{text}`")),
        Err(Misfit::SentTwice(at)) => Err(format!("the part `{at}` is sent more than once")),
    }
}

/// The JSON value of a text or JSON part's `bytes`.
fn value(name: &str, reading: Reading, bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| format!("the part `{name}` is not UTF-8 text"))?;
    let wrong = |what: &str| format!("the part `{name}` must be {what}, not `{text}`");
    match reading {
        Reading::Text(Scalar::String) | Reading::File => Ok(Value::String(text.to_string())),
        Reading::Text(Scalar::Boolean) => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(wrong("`true` or `false`")),
        },
        Reading::Text(Scalar::Integer) => match serde_json::from_str::<Number>(text) {
            Ok(number) if number.is_i64() || number.is_u64() => Ok(Value::Number(number)),
            _ => Err(wrong("an integer")),
        },
        Reading::Text(Scalar::Number) => serde_json::from_str::<Number>(text)
            .map(Value::Number)
            .map_err(|_| wrong("a number")),
        Reading::Json => crate::input::exact_json_value(text.as_bytes())
            .ok_or_else(|| format!("the part `{name}` is not a JSON document")),
    }
}

/// A field's value: JSON, or files whose bytes are handed to the field
/// directly (a sequence of bytes, never a JSON array of numbers).
enum Member {
    Json(Value),
    File(Sent),
    Files(Vec<Sent>),
}

impl<'de> IntoDeserializer<'de, serde_json::Error> for Member {
    type Deserializer = Member;

    fn into_deserializer(self) -> Member {
        self
    }
}

impl<'de> de::Deserializer<'de> for Member {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self {
            Member::Json(value) => value.deserialize_any(visitor),
            Member::File(file) => file.deserialize_any(visitor),
            Member::Files(files) => {
                let mut items = SeqDeserializer::new(files.into_iter());
                let value = visitor.visit_seq(&mut items)?;
                items.end()?;
                Ok(value)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self {
            Member::Json(value) => value.deserialize_option(visitor),
            files => visitor.visit_some(files),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self {
            Member::Json(value) => value.deserialize_enum(name, variants, visitor),
            files => files.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self {
            Member::Json(value) => value.deserialize_newtype_struct(name, visitor),
            files => visitor.visit_newtype_struct(files),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

impl<'de> IntoDeserializer<'de, serde_json::Error> for Sent {
    type Deserializer = Sent;

    fn into_deserializer(self) -> Sent {
        self
    }
}

/// A file part: a map of `file_name`, `content_type` and `bytes`.
impl<'de> de::Deserializer<'de> for Sent {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let fields = [
            ("file_name", FileField::Text(self.file_name)),
            ("content_type", FileField::Text(self.content_type)),
            ("bytes", FileField::Bytes(self.bytes)),
        ];
        let mut map = MapDeserializer::new(fields.into_iter());
        let value = visitor.visit_map(&mut map)?;
        map.end()?;
        Ok(value)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// A field of a file part.
enum FileField {
    Text(Option<String>),
    Bytes(Bytes),
}

impl<'de> IntoDeserializer<'de, serde_json::Error> for FileField {
    type Deserializer = FileField;

    fn into_deserializer(self) -> FileField {
        self
    }
}

impl<'de> de::Deserializer<'de> for FileField {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self {
            FileField::Text(Some(text)) => visitor.visit_string(text),
            FileField::Text(None) => visitor.visit_none(),
            // A sequence of `u8`, as `Vec<u8>` reads it.
            FileField::Bytes(bytes) => {
                let mut items = SeqDeserializer::new(bytes.iter().copied());
                let value = visitor.visit_seq(&mut items)?;
                items.end()?;
                Ok(value)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self {
            FileField::Text(None) => visitor.visit_none(),
            some => visitor.visit_some(some),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    struct File {
        file_name: Option<String>,
        content_type: Option<String>,
        bytes: Vec<u8>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Link {
        create: bool,
        expires_at: Option<i64>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Upload {
        purpose: String,
        copies: Option<u32>,
        file: File,
        link: Option<Link>,
        expand: Option<Vec<String>>,
        scans: Option<Vec<File>>,
    }

    const PARTS: &[Part] = &[
        Part::text("copies", Scalar::Integer),
        Part::file("file"),
        Part::json("link"),
        Part::text("expand", Scalar::String).many(),
        Part::file("scans").many(),
    ];

    /// A body of `parts` (name, headers after the disposition, content)
    /// with `boundary`.
    fn body(boundary: &str, parts: &[(&str, &str, &[u8])]) -> Request {
        let mut bytes = Vec::new();
        for (disposition, headers, content) in parts {
            bytes.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; {disposition}\r\n{headers}\r\n")
                    .as_bytes(),
            );
            bytes.extend_from_slice(content);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let mut request = Request {
            body: bytes.into(),
            ..Request::new(axum::http::Method::POST, "/files")
        };
        request.headers.insert(
            "content-type",
            format!("multipart/form-data; boundary={boundary}").parse().unwrap(),
        );
        request
    }

    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0, 0xff];

    fn upload(boundary: &str) -> Request {
        body(
            boundary,
            &[
                ("name=\"purpose\"", "", b"logo"),
                ("name=\"file\"; filename=\"a.png\"", "Content-Type: image/png\r\n", PNG),
                ("name=\"copies\"", "", b"2"),
                ("name=\"link\"", "Content-Type: application/json\r\n", br#"{"create": true}"#),
                ("name=\"expand[]\"", "", b"a"),
                ("name=\"expand[]\"", "", b"b"),
                ("name=\"scans\"; filename=\"1.pdf\"", "", b"one"),
                ("name=\"scans\"; filename=\"2.pdf\"", "", b"two"),
            ],
        )
    }

    fn detail(refused: Reply) -> String {
        String::from_utf8_lossy(&refused.body).into_owned()
    }

    #[test]
    fn parts_arrive_as_their_types() {
        let upload: Upload = upload("xyz").multipart_as(PARTS).unwrap();
        let scan = |name: &str, bytes: &[u8]| File {
            file_name: Some(name.into()),
            content_type: None,
            bytes: bytes.to_vec(),
        };
        assert_eq!(
            upload,
            Upload {
                purpose: "logo".into(),
                copies: Some(2),
                file: File {
                    file_name: Some("a.png".into()),
                    content_type: Some("image/png".into()),
                    bytes: PNG.to_vec(),
                },
                link: Some(Link {
                    create: true,
                    expires_at: None
                }),
                expand: Some(vec!["a".into(), "b".into()]),
                scans: Some(vec![scan("1.pdf", b"one"), scan("2.pdf", b"two")]),
            }
        );
    }

    /// Stripe's `file_link_data`: an object of scalars and a map of
    /// texts, which Stripe's clients send as parts in brackets.
    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct FileLink {
        create: bool,
        expires_at: Option<i64>,
        metadata: Option<std::collections::BTreeMap<String, String>>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct LinkedUpload {
        purpose: String,
        file_link_data: Option<FileLink>,
    }

    const FILE_LINK: Shape = Shape::Members(&[
        ("create", Shape::Scalar(Scalar::Boolean)),
        ("expires_at", Shape::Scalar(Scalar::Integer)),
        ("metadata", Shape::Members(&[])),
    ]);
    const LINKED: &[Part] = &[Part::json("file_link_data").brackets(&FILE_LINK)];

    fn linked(parts: &[(&str, &[u8])]) -> Result<LinkedUpload, String> {
        let mut sent: Vec<(String, &str, &[u8])> = vec![("name=\"purpose\"".into(), "", b"logo")];
        sent.extend(parts.iter().map(|(name, text)| (format!("name=\"{name}\""), "", *text)));
        let sent: Vec<(&str, &str, &[u8])> = sent.iter().map(|(a, b, c)| (a.as_str(), *b, *c)).collect();
        body("b", &sent)
            .multipart_as::<LinkedUpload>(LINKED)
            .map_err(detail)
    }

    #[test]
    fn an_object_sent_as_parts_in_brackets_is_read_as_its_type() {
        let read = linked(&[
            ("file_link_data[create]", b"true"),
            ("file_link_data[expires_at]", b"1700000000"),
            ("file_link_data[metadata][order]", b"6735"),
        ])
        .unwrap();
        let metadata = [("order".to_string(), "6735".to_string())].into();
        assert_eq!(
            read.file_link_data,
            Some(FileLink {
                create: true,
                expires_at: Some(1_700_000_000),
                metadata: Some(metadata),
            })
        );
        // The same value as one JSON part.
        let json = body(
            "b",
            &[
                ("name=\"purpose\"", "", b"logo"),
                (
                    "name=\"file_link_data\"",
                    "Content-Type: application/json\r\n",
                    br#"{"create":true,"expires_at":1700000000,"metadata":{"order":"6735"}}"#,
                ),
            ],
        );
        assert_eq!(json.multipart_as::<LinkedUpload>(LINKED).unwrap(), read);
    }

    #[test]
    fn a_bracketed_part_that_does_not_fit_is_refused_by_where_it_was_sent() {
        let refused = linked(&[("file_link_data[create]", b"yes")]).unwrap_err();
        assert!(
            refused.contains("the part `file_link_data[create]` must be `true` or `false`, not `yes`"),
            "{refused}"
        );
        let twice = linked(&[("file_link_data[create]", b"true"), ("file_link_data[create]", b"false")])
            .unwrap_err();
        assert!(twice.contains("the part `file_link_data[create]` is sent more than once"), "{twice}");
        let both = linked(&[("file_link_data", b"{}"), ("file_link_data[create]", b"true")]).unwrap_err();
        assert!(both.contains("sent both whole and in brackets"), "{both}");
        // A member the schema does not name is refused by the type.
        let unknown = linked(&[("file_link_data[create]", b"true"), ("file_link_data[colour]", b"red")])
            .unwrap_err();
        assert!(unknown.contains("colour"), "{unknown}");
        // Without a shape, brackets are parts the schema does not declare.
        let undeclared = body(
            "b",
            &[("name=\"purpose\"", "", b"logo"), ("name=\"file_link_data[create]\"", "", b"true")],
        )
        .multipart_as::<LinkedUpload>(&[Part::json("file_link_data")])
        .map_err(detail)
        .unwrap_err();
        assert!(undeclared.contains("file_link_data[create]"), "{undeclared}");
    }

    #[test]
    fn a_list_declared_joined_is_split_at_its_delimiter() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Tagged {
            tags: Vec<String>,
            codes: Option<Vec<u32>>,
        }
        const JOINED: &[Part] = &[
            Part::text("tags", Scalar::String).joined(','),
            Part::text("codes", Scalar::Integer).joined('|'),
        ];
        let tagged = |parts: &[(&str, &[u8])]| {
            let names: Vec<String> = parts.iter().map(|(name, _)| format!("name=\"{name}\"")).collect();
            let sent: Vec<(&str, &str, &[u8])> = names
                .iter()
                .zip(parts)
                .map(|(name, (_, text))| (name.as_str(), "", *text))
                .collect();
            body("b", &sent).multipart_as::<Tagged>(JOINED).map_err(detail)
        };
        let joined = tagged(&[("tags", b"a,b"), ("codes", b"1|2")]).unwrap();
        assert_eq!(joined, Tagged { tags: vec!["a".into(), "b".into()], codes: Some(vec![1, 2]) });
        // The part repeated, or some of it joined, is the same list.
        assert_eq!(tagged(&[("tags", b"a"), ("tags", b"b"), ("codes", b"1"), ("codes", b"2")]).unwrap(), joined);
        assert_eq!(tagged(&[("tags[]", b"a,b"), ("codes", b"1|2")]).unwrap(), joined);
        // One item, and an empty text (one empty item).
        assert_eq!(tagged(&[("tags", b"a")]).unwrap().tags, ["a"]);
        assert_eq!(tagged(&[("tags", b"")]).unwrap().tags, [""]);
        // Each item is read as its type.
        let refused = tagged(&[("tags", b"a"), ("codes", b"1|x")]).unwrap_err();
        assert!(refused.contains("the part `codes` must be an integer, not `x`"), "{refused}");
    }

    #[test]
    fn a_part_that_does_not_fit_is_refused_by_name() {
        let refused = |parts: &[(&str, &str, &[u8])]| {
            let refused = body("b", parts).multipart_as::<Upload>(PARTS).err().unwrap();
            assert_eq!(refused.status, StatusCode::BAD_REQUEST);
            detail(refused)
        };
        let file: (&str, &str, &[u8]) = ("name=\"file\"; filename=\"a\"", "", b"x");
        let purpose: (&str, &str, &[u8]) = ("name=\"purpose\"", "", b"logo");
        let copies = refused(&[purpose, file, ("name=\"copies\"", "", b"two")]);
        assert!(copies.contains("the part `copies` must be an integer, not `two`"), "{copies}");
        let missing = refused(&[file]);
        assert!(missing.contains("missing field `purpose`"), "{missing}");
        let link = refused(&[purpose, file, ("name=\"link\"", "", br#"{"create": "yes"}"#)]);
        assert!(link.contains("`link.create`"), "{link}");
        let twice = refused(&[purpose, purpose, file]);
        assert!(twice.contains("`purpose` is sent more than once"), "{twice}");
        let unknown = refused(&[purpose, file, ("name=\"other\"", "", b"x")]);
        assert!(unknown.contains("unknown field `other`"), "{unknown}");
        let mut form = upload("b");
        form.headers.insert(
            "content-type",
            "application/x-www-form-urlencoded".parse().unwrap(),
        );
        let wrong_type = form.multipart_as::<Upload>(PARTS).err().unwrap();
        assert_eq!(wrong_type.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let mut cut = upload("b");
        cut.body = cut.body.slice(..cut.body.len() / 2);
        assert_eq!(
            cut.multipart_as::<Upload>(PARTS).err().unwrap().status,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn the_fingerprint_tree_leaves_out_the_boundary_and_the_order_of_names() {
        let tree = |request: &Request| canonical_multipart(&request.headers, &request.body, &[]).unwrap();
        let first = tree(&upload("xyz"));
        assert_eq!(first, tree(&upload("another-boundary-0123")));
        let reordered = body(
            "r",
            &[
                ("name=\"expand[]\"", "", b"a"),
                ("name=\"copies\"", "", b"2"),
                ("name=\"link\"", "Content-Type: application/json\r\n", br#"{ "create":true }"#),
                ("name=\"scans\"; filename=\"1.pdf\"", "", b"one"),
                ("name=\"file\"; filename=\"a.png\"", "Content-Type: image/png\r\n", PNG),
                ("name=\"expand[]\"", "", b"b"),
                ("name=\"purpose\"", "", b"logo"),
                ("name=\"scans\"; filename=\"2.pdf\"", "", b"two"),
            ],
        );
        assert_eq!(first, tree(&reordered));
        // Another file's bytes, another name, a list in another order.
        let other_file = body("b", &[("name=\"file\"; filename=\"a.png\"", "", b"PNH")]);
        let same_file = body("b", &[("name=\"file\"; filename=\"a.png\"", "", b"PNG")]);
        assert_ne!(tree(&other_file), tree(&same_file));
        let renamed = body("b", &[("name=\"file\"; filename=\"b.png\"", "", b"PNG")]);
        assert_ne!(tree(&renamed), tree(&same_file));
        let ab = body("b", &[("name=\"x\"", "", b"a"), ("name=\"x\"", "", b"b")]);
        let ba = body("b", &[("name=\"x\"", "", b"b"), ("name=\"x\"", "", b"a")]);
        assert_ne!(tree(&ab), tree(&ba));
        // Text is not the same request as a file with that content.
        let text = body("b", &[("name=\"f\"", "", b"a")]);
        let file = body("b", &[("name=\"f\"; filename=\"f\"", "", b"a")]);
        assert_ne!(tree(&text), tree(&file));
    }

    #[test]
    fn a_list_joined_in_one_part_is_fingerprinted_as_its_items() {
        let joined = [crate::JoinedList { name: "labels", delimiter: '|' }];
        let tree = |parts: &[(&str, &str, &[u8])]| {
            let request = body("b", parts);
            canonical_multipart(&request.headers, &request.body, &joined).unwrap()
        };
        let one_part = tree(&[("name=\"labels\"", "", b"q3|tax")]);
        assert_eq!(one_part, tree(&[("name=\"labels\"", "", b"q3"), ("name=\"labels\"", "", b"tax")]));
        // Under `name[]` too, as it is read.
        assert_eq!(
            tree(&[("name=\"labels[]\"", "", b"q3|tax")]),
            tree(&[("name=\"labels[]\"", "", b"q3"), ("name=\"labels[]\"", "", b"tax")])
        );
        // The reader gathers `labels`, `labels[]` and `labels[0]` into one
        // list in the order sent: another order is another list.
        let plain: (&str, &str, &[u8]) = ("name=\"labels\"", "", b"a");
        let empty: (&str, &str, &[u8]) = ("name=\"labels[]\"", "", b"b");
        assert_ne!(tree(&[plain, empty]), tree(&[empty, plain]));
        let first: (&str, &str, &[u8]) = ("name=\"labels[1]\"", "", b"a");
        let second: (&str, &str, &[u8]) = ("name=\"labels[0]\"", "", b"b");
        assert_ne!(tree(&[first, second]), tree(&[second, first]));
        assert_ne!(one_part, tree(&[("name=\"labels\"", "", b"tax|q3")]));
        // A file is never split, nor is a list not named.
        let file: (&str, &str, &[u8]) = ("name=\"labels\"; filename=\"l\"", "", b"q3|tax");
        let request = body("b", &[file]);
        assert_eq!(
            canonical_multipart(&request.headers, &request.body, &joined),
            canonical_multipart(&request.headers, &request.body, &[])
        );
        assert_ne!(tree(&[("name=\"other\"", "", b"q3|tax")]), tree(&[("name=\"other\"", "", b"q3"), ("name=\"other\"", "", b"tax")]));
    }
}
