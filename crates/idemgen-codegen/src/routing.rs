//! How the generated router serves a spec's paths: axum matches whole
//! segments, each literal or one `{name}`, so a parameter with text
//! around it in its segment (`{Sid}.json`) is routed whole and the text is
//! cut off when the request is read.

use serde::Serialize;

/// A path parameter with literal text around it in its segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathAffix {
    pub name: String,
    pub prefix: String,
    pub suffix: String,
}

/// A path as the generated router serves it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RoutedPath {
    /// Each segment literal or a whole `{name}`.
    pub(crate) route: String,
    /// The text cut off around the parameters routed whole.
    pub(crate) affixes: Vec<PathAffix>,
}

/// One segment of a path: literal text, or one parameter with literal
/// text (perhaps none) around it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Segment<'a> {
    Literal(&'a str),
    Param {
        prefix: &'a str,
        name: &'a str,
        suffix: &'a str,
    },
}

/// Splits `segment`; `Err` for what axum cannot route even whole: two
/// parameters (`{a}-{b}`), unbalanced braces, a `*` in a name, or a
/// literal axum would read as a wildcard (`:id`, `*rest`).
pub(crate) fn split_segment(segment: &str) -> Result<Segment<'_>, String> {
    let unroutable = || format!("path segment `{segment}` cannot be routed");
    let Some(open) = segment.find('{') else {
        if segment.contains('}') || segment.starts_with([':', '*']) {
            return Err(unroutable());
        }
        return Ok(Segment::Literal(segment));
    };
    let (prefix, rest) = segment.split_at(open);
    let Some(close) = rest.find('}') else {
        return Err(unroutable());
    };
    let (name, suffix) = (&rest[1..close], &rest[close + 1..]);
    if name.is_empty()
        || name.contains(['{', '*'])
        || prefix.contains('}')
        || suffix.contains(['{', '}'])
    {
        return Err(unroutable());
    }
    Ok(Segment::Param {
        prefix,
        name,
        suffix,
    })
}

/// The route axum serves `path` at: a parameter with text around it in
/// its segment (`{Sid}.json`) is captured whole, axum matching whole
/// segments only, and the text is cut off when the request is read.
pub(crate) fn routed_path(path: &str) -> Result<RoutedPath, String> {
    if !path.starts_with('/') {
        return Err(format!("path `{path}` does not start with `/`"));
    }
    let mut route = String::new();
    let mut affixes = Vec::new();
    for segment in path.split('/').skip(1) {
        route.push('/');
        match split_segment(segment)? {
            Segment::Literal(text) => route.push_str(text),
            Segment::Param {
                prefix,
                name,
                suffix,
            } => {
                route.push_str(&format!("{{{name}}}"));
                if !prefix.is_empty() || !suffix.is_empty() {
                    affixes.push(PathAffix {
                        name: name.to_string(),
                        prefix: prefix.to_string(),
                        suffix: suffix.to_string(),
                    });
                }
            }
        }
    }
    Ok(RoutedPath { route, affixes })
}

/// The route with parameter names erased: two routes of one shape collide.
pub(crate) fn route_shape(route: &str) -> String {
    route
        .split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn affix(name: &str, prefix: &str, suffix: &str) -> PathAffix {
        PathAffix {
            name: name.into(),
            prefix: prefix.into(),
            suffix: suffix.into(),
        }
    }

    #[test]
    fn a_segment_is_literal_or_one_parameter_with_text_around_it() {
        assert_eq!(
            split_segment("Calls.json"),
            Ok(Segment::Literal("Calls.json"))
        );
        assert_eq!(split_segment(""), Ok(Segment::Literal("")));
        let param = |prefix, name, suffix| {
            Ok(Segment::Param {
                prefix,
                name,
                suffix,
            })
        };
        assert_eq!(split_segment("{id}"), param("", "id", ""));
        assert_eq!(split_segment("{Sid}.json"), param("", "Sid", ".json"));
        assert_eq!(split_segment("v{version}"), param("v", "version", ""));
        assert_eq!(split_segment("a{b}c"), param("a", "b", "c"));
        for unroutable in [
            "{a}-{b}", "{a}{b}", "{}", "{a", "a}", "{a}}", "}{b}", "{*rest}", ":id", "*rest",
        ] {
            assert_eq!(
                split_segment(unroutable),
                Err(format!("path segment `{unroutable}` cannot be routed")),
                "{unroutable}"
            );
        }
    }

    #[test]
    fn a_parameter_with_text_around_it_is_routed_whole_and_its_text_cut() {
        assert_eq!(
            routed_path("/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json"),
            Ok(RoutedPath {
                route: "/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}".into(),
                affixes: vec![affix("Sid", "", ".json")],
            })
        );
        assert_eq!(
            routed_path("/api/v{version}/things/{id}"),
            Ok(RoutedPath {
                route: "/api/{version}/things/{id}".into(),
                affixes: vec![affix("version", "v", "")],
            })
        );
        assert_eq!(
            routed_path("/orders/{order_no}"),
            Ok(RoutedPath {
                route: "/orders/{order_no}".into(),
                affixes: vec![],
            })
        );
        assert_eq!(
            routed_path("/range/{from}-{to}"),
            Err("path segment `{from}-{to}` cannot be routed".into())
        );
        assert_eq!(
            routed_path("orders"),
            Err("path `orders` does not start with `/`".into())
        );
        // `/{id}.json` and `/{id}.xml` are one route.
        let shape = |path| route_shape(&routed_path(path).unwrap().route);
        assert_eq!(shape("/things/{id}.json"), shape("/things/{thing}.xml"));
        assert_eq!(shape("/things/{id}.json"), "/things/{}");
        assert_ne!(shape("/things/{id}.json"), shape("/things.json"));
    }
}
