//! What the generator decided, before any Rust is written: the Rust type
//! each schema use maps to, and the definitions the models module holds.

/// The Rust type of one use of a schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// A type defined in the models module.
    Named(String),
    String,
    Bool,
    /// `i32`, `i64`, `u32`, `u64`, …
    Integer(&'static str),
    /// `f32` or `f64`.
    Number(&'static str),
    Vec(Box<Ty>),
    /// `BTreeMap<String, T>`: a JSON object used as a dictionary.
    Map(Box<Ty>),
    Option(Box<Ty>),
    /// A named type that contains itself by value (a recursive schema).
    Boxed(Box<Ty>),
    /// `format: date-time`: `chrono::DateTime<chrono::Utc>`, read and
    /// written as RFC 3339.
    DateTime,
    /// `format: date`: `chrono::NaiveDate` (`2024-06-15`).
    Date,
    /// Bytes of a body that is not JSON.
    Bytes,
    /// Any JSON value: `serde_json::Value`.
    Json,
}

impl Ty {
    pub fn option(self) -> Ty {
        match self {
            Ty::Option(_) | Ty::Json => self,
            other => Ty::Option(Box::new(other)),
        }
    }

    pub fn uses_map(&self) -> bool {
        match self {
            Ty::Map(_) => true,
            Ty::Vec(inner) | Ty::Option(inner) | Ty::Boxed(inner) => inner.uses_map(),
            _ => false,
        }
    }

    /// Whether the type is or holds a chrono type.
    pub fn uses_time(&self) -> bool {
        match self {
            Ty::DateTime | Ty::Date => true,
            Ty::Vec(inner) | Ty::Map(inner) | Ty::Option(inner) | Ty::Boxed(inner) => {
                inner.uses_time()
            }
            _ => false,
        }
    }

    /// The named type this use holds by value (not behind `Vec`, a map
    /// or a `Box`): what makes a struct that contains it infinitely large
    /// when the two refer to each other.
    pub fn by_value(&self) -> Option<&str> {
        match self {
            Ty::Named(name) => Some(name),
            Ty::Option(inner) => inner.by_value(),
            _ => None,
        }
    }

    /// Puts the by-value named type in a `Box` (keeping an `Option` outside).
    pub fn boxed(self) -> Ty {
        match self {
            Ty::Option(inner) => Ty::Option(Box::new(inner.boxed())),
            Ty::Named(_) => Ty::Boxed(Box::new(self)),
            other => other,
        }
    }

    /// The type as Rust source, relative to the models module.
    pub fn rust(&self) -> String {
        match self {
            Ty::Named(name) => name.clone(),
            Ty::String => "String".into(),
            Ty::Bool => "bool".into(),
            Ty::Integer(name) | Ty::Number(name) => (*name).into(),
            Ty::Vec(inner) => format!("Vec<{}>", inner.rust()),
            Ty::Map(inner) => format!("BTreeMap<String, {}>", inner.rust()),
            Ty::Option(inner) => format!("Option<{}>", inner.rust()),
            Ty::Boxed(inner) => format!("Box<{}>", inner.rust()),
            Ty::DateTime => "chrono::DateTime<chrono::Utc>".into(),
            Ty::Date => "chrono::NaiveDate".into(),
            Ty::Bytes => "Vec<u8>".into(),
            Ty::Json => "serde_json::Value".into(),
        }
    }
}

/// One type of the models module.
#[derive(Debug, Clone)]
pub struct TypeDef {
    pub name: String,
    pub docs: Vec<String>,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Struct(Struct),
    /// A string enum: each variant and the value it stands for.
    StringEnum(Vec<EnumValue>),
    /// `oneOf` / `anyOf` / several types whose variants exclude each other
    /// (checked by [`super::union`]): the one variant that fits is chosen.
    Untagged(Vec<Alternative>),
    /// `oneOf` / `anyOf` with a `discriminator`: the property named `tag`
    /// chooses the variant (`#[serde(tag = "…")]`).
    Tagged(Tagged),
    /// `pub type Name = Ty;`
    Alias(Ty),
    /// `pub struct Name(pub Ty);`: an alias that refers to itself, which a
    /// type alias cannot.
    Newtype(Ty),
    /// An operation's answers: one variant per declared status.
    Response(Vec<ResponseCase>),
    /// The body of a response that declares several media types: one
    /// variant per media type, and the variant the business code builds
    /// is the `Content-Type` sent.
    Media(Vec<MediaCase>),
}

/// One media type a response's body may be sent as.
#[derive(Debug, Clone)]
pub struct MediaCase {
    pub variant: String,
    /// The media type as the spec writes it (its `content` key).
    pub media_type: String,
    pub body: Ty,
    pub docs: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Struct {
    pub fields: Vec<Field>,
    /// `additionalProperties` with a schema: the other members, kept.
    pub additional: Option<Ty>,
    /// `additionalProperties: false`: unknown members are an error.
    pub deny_unknown: bool,
}

#[derive(Debug, Clone)]
pub struct Field {
    /// The Rust name (`r#type` for keywords).
    pub name: String,
    /// The property name on the wire.
    pub wire: String,
    /// The type when present; optional fields are wrapped in `Option` on output.
    pub ty: Ty,
    pub required: bool,
    pub docs: Vec<String>,
    /// The schema's `default`, for a property that may be absent: the
    /// value it reads as when absent (when [`super::emit`] can write it
    /// as Rust; otherwise only its doc says it).
    pub default: Option<serde_json::Value>,
}

impl Field {
    /// The field's declared type: optional properties are `Option`s.
    pub fn declared(&self) -> Ty {
        if self.required {
            self.ty.clone()
        } else {
            self.ty.clone().option()
        }
    }
}

#[derive(Debug, Clone)]
pub struct EnumValue {
    pub variant: String,
    pub wire: String,
}

#[derive(Debug, Clone)]
pub struct ResponseCase {
    pub variant: String,
    pub status: super::StatusPattern,
    /// `None` when the response has no content.
    pub body: Option<Ty>,
    /// The body's media type; `None` without content, or when `body` is
    /// a [`Kind::Media`] enum whose variant chooses it.
    pub media_type: Option<String>,
    /// Whether `body` is a [`Kind::Media`] enum.
    pub chooses_media: bool,
    pub docs: Vec<String>,
    /// The headers the response declares that the business code sets,
    /// as fields of the variant (`wire` is the header's name).
    pub headers: Vec<Field>,
}

impl ResponseCase {
    /// A variant with named fields: one that carries its status or
    /// headers. The others are a unit or a tuple of the body, as without
    /// headers.
    pub fn has_fields(&self) -> bool {
        self.status.carries_status() || !self.headers.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct Alternative {
    pub variant: String,
    pub ty: Ty,
    /// Set on every variant of a union whose variants one property's value
    /// tells apart ([`super::union`]); `None` in a union read in order.
    pub chosen_by: Option<ChosenBy>,
}

/// The values of a property that choose one variant of a union: an
/// object whose `property` is one of `values` is that variant. An object
/// without it could be more than one of them (a union is chosen so only
/// when its variants that may lack it take each other's values, else they
/// would have an order), so it is kept whole, as the `without` variant.
#[derive(Debug, Clone)]
pub struct ChosenBy {
    pub property: String,
    pub values: Vec<String>,
    /// The union's variant for an object without the property (the same
    /// on every variant), which holds it as it came.
    pub without: String,
}

/// A union whose variant a property's value names.
#[derive(Debug, Clone)]
pub struct Tagged {
    /// The discriminator's `propertyName`.
    pub tag: String,
    pub variants: Vec<TaggedVariant>,
}

#[derive(Debug, Clone)]
pub struct TaggedVariant {
    pub variant: String,
    /// The tag's value that names this variant (from the `mapping`, else
    /// the schema's name).
    pub wire: String,
    /// Other `mapping` keys that name the same schema.
    pub aliases: Vec<String>,
    /// The variant's schema.
    pub ty: Ty,
    /// The variant schema's members without the tag, when it declares the
    /// tag itself: serde takes the tag out before the variant reads the
    /// rest, so such a variant holds its fields rather than its struct.
    pub fields: Option<Vec<Field>>,
}

/// A JSON integer as `rust` (`i64`, `u32`, …) holds it, or `None` outside
/// the type's range (serde_json reads `1.0` as a float, which no integer
/// type takes).
pub(crate) fn integer_value(rust: &str, number: &serde_json::Number) -> Option<i128> {
    let whole = number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))?;
    let (low, high): (i128, i128) = match rust {
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    (low..=high).contains(&whole).then_some(whole)
}
