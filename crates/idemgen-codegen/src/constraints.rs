//! The validation keywords of an operation's body (JSON, form or
//! multipart) and parameters, as the `idemgen_runtime::Constraint` tables
//! the generated handler checks before any key is claimed.
//!
//! serde's types already hold `type`, `required`, `additionalProperties:
//! false` and string enums; this collects the rest (`minimum`, `maximum`
//! and their exclusive forms, `multipleOf`, `pattern`, `minLength`,
//! `maxLength`, `minItems`, `maxItems`, `uniqueItems`, `minProperties`,
//! `maxProperties`, enums of other values), following `$ref`s and `allOf`
//! into properties and array items. A keyword inside one branch of a
//! `oneOf`/`anyOf` is collected only where the branch a value takes is
//! known (the branch beside null, a scalar branch among branches of
//! distinct types, a branch chosen by a property's value); a keyword
//! below a schema that contains itself is not, nor a `pattern` Rust's
//! regex cannot read: each such pattern is a warning.

use std::collections::HashSet;

use idemgen_runtime::decimal::Decimal;
use idemgen_spec::Workspace;
use idemgen_spec::node::{Node, Value};
use idemgen_spec::operations::Operation;
use serde::Serialize;

use crate::names::rust_string;
use crate::types::StatusPattern;

/// Deepest nesting of properties and items followed.
const MAX_DEPTH: usize = 12;

/// One `Constraint { at, check }` as the template writes it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConstraintContext {
    /// The pointer, as a Rust string literal.
    pub at: String,
    /// The `Check::…` expression.
    pub check: String,
}

/// The constraints of one declared response's JSON body, as an
/// `idemgen_runtime::AnswerConstraints` entry.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AnswerContext {
    /// The response's key (`200`, `4XX`, `default`), as a Rust string
    /// literal.
    pub status: String,
    /// Its media type without parameters, as a Rust string literal.
    pub media_type: String,
    pub constraints: Vec<ConstraintContext>,
    /// The name of the body's schema, when it is a `$ref` (`Error` for
    /// `#/components/schemas/Error`).
    pub schema_name: Option<String>,
    /// The name of the static that holds `constraints`, shared by every
    /// answer held to the same ones; set when the routes are put
    /// together, `None` for none.
    pub table: Option<String>,
}

/// The constraints of an operation's body (from the body), of its
/// parameters (from the object of parameter names) and of the JSON
/// bodies it answers with, and warnings.
#[derive(Debug, Default)]
pub struct OperationConstraints {
    pub body: Vec<ConstraintContext>,
    pub params: Vec<ConstraintContext>,
    /// Every declared JSON response, those without keywords included (a
    /// `200` without any must not be held to `default`'s); empty when
    /// none has any.
    pub answers: Vec<AnswerContext>,
    pub warnings: Vec<String>,
    /// The schemas with keywords no table checks, each with which (see
    /// `Collector::unchecked`): a summary warning, not one a schema
    /// (Stripe has hundreds inside `anyOf`s).
    pub unchecked: Vec<String>,
}

/// `key`: where the contract's idempotency key is (`("header",
/// "Idempotency-Key")`), which the engine checks itself.
pub fn collect(
    workspace: &Workspace,
    operation: &Operation<'_>,
    key: Option<(&str, &str)>,
) -> OperationConstraints {
    let mut collector = Collector {
        workspace,
        found: Vec::new(),
        warnings: Vec::new(),
        unchecked: Vec::new(),
        path: HashSet::new(),
        or_null_at: None,
        branch_at: None,
        reported: HashSet::new(),
        text: false,
        choosing: true,
        chosen: HashSet::new(),
    };
    if let Some((schema, is_json)) = body_schema(workspace, operation) {
        // A form's union is never read by a property's value (its values
        // are text), so neither are its keywords.
        collector.choosing = is_json;
        collector.schema(schema, "", 0);
        collector.choosing = true;
    }
    let body = std::mem::take(&mut collector.found);
    collector.text = true;
    for (name, location, schema) in parameters(workspace, operation) {
        let is_key = key.is_some_and(|(key_in, key_name)| {
            key_in == location && key_name.eq_ignore_ascii_case(name)
        });
        if !is_key {
            collector.schema(schema, &format!("/{}", escape(name)), 0);
        }
    }
    let params = std::mem::take(&mut collector.found);
    collector.text = false;
    let mut declared = Vec::new();
    for (status, media_type, schema) in answer_schemas(workspace, operation) {
        if let Some(schema) = schema {
            collector.schema(schema, "", 0);
        }
        let found = std::mem::take(&mut collector.found);
        declared.push((status, media_type, found, schema.and_then(schema_name)));
    }
    // A response without keywords is listed only where it keeps its
    // answers from being held to its class's or `default`'s.
    let shadows = |status: StatusPattern| {
        declared.iter().any(|(other, _, found, _)| {
            !found.is_empty()
                && *other > status
                && match status {
                    StatusPattern::Exact(code) => other.matches(code),
                    StatusPattern::Range(_) => *other == StatusPattern::Default,
                    StatusPattern::Default => false,
                }
        })
    };
    let answers = declared
        .iter()
        .filter(|(status, _, found, _)| !found.is_empty() || shadows(*status))
        .map(|(status, media_type, found, schema_name)| AnswerContext {
            status: rust_string(&status.label()),
            media_type: rust_string(media_type),
            constraints: found.clone(),
            schema_name: schema_name.clone(),
            table: None,
        })
        .collect();
    OperationConstraints {
        body,
        params,
        answers,
        warnings: collector.warnings,
        unchecked: collector.unchecked,
    }
}

/// One `static NAME: &[Constraint]` of the routes, shared by every answer
/// held to the same keywords (Stripe's 400-odd operations answer errors
/// with one schema: one table, not one per operation).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AnswerTable {
    pub name: String,
    /// What the keywords are of, for its doc comment: a named schema,
    /// else the first operation and status it was found on.
    pub schema: Option<String>,
    pub operation: String,
    pub status: String,
    /// Whether answers of other schemas (or inline ones elsewhere) are
    /// held to the same keywords, and share it.
    pub shared: bool,
    pub constraints: Vec<ConstraintContext>,
}

/// Names a shared table for each distinct list of keywords the answers
/// of `operations` (each its display name, identifier and answers) are
/// held to, sets each answer's `table`, and returns the tables in the
/// order first used.
pub fn share_answer_tables<'a>(
    operations: impl Iterator<Item = (&'a str, &'a str, &'a mut Vec<AnswerContext>)>,
) -> Vec<AnswerTable> {
    let mut tables: Vec<AnswerTable> = Vec::new();
    let mut names = crate::names::Identifiers::default();
    for (display, ident, answers) in operations {
        for answer in answers.iter_mut().filter(|a| !a.constraints.is_empty()) {
            if let Some(table) = tables
                .iter_mut()
                .find(|table| table.constraints == answer.constraints)
            {
                table.shared |= table.schema.is_none() || table.schema != answer.schema_name;
                answer.table = Some(table.name.clone());
                continue;
            }
            let status = answer.status.trim_matches('"');
            let base = match &answer.schema_name {
                Some(schema) => schema.clone(),
                None => format!("{ident}_{status}"),
            };
            // `_CHECKS` fits the room `assign` leaves for a suffix.
            let name = format!("{}_CHECKS", names.assign(&base).to_ascii_uppercase());
            answer.table = Some(name.clone());
            tables.push(AnswerTable {
                name,
                schema: answer.schema_name.clone(),
                operation: display.to_string(),
                status: status.to_string(),
                shared: false,
                constraints: answer.constraints.clone(),
            });
        }
    }
    tables
}

/// The name of the schema `schema` refers to, if it is a `$ref`: the
/// reference's last segment, as the type it becomes is named.
fn schema_name(schema: &Node) -> Option<String> {
    let reference = schema.get("$ref")?.as_str()?;
    Some(crate::types::reference_name(reference))
}

/// Each declared response's status, JSON media type (without
/// parameters, lowercased, each once) and schema, in the spec's order. A
/// JSON media type without a schema is listed too: its answers are any
/// JSON, held to no keywords, not to those of a less specific response.
fn answer_schemas<'w>(
    workspace: &'w Workspace,
    operation: &Operation<'w>,
) -> Vec<(StatusPattern, String, Option<&'w Node>)> {
    let mut found = Vec::new();
    for entry in operation
        .node
        .get("responses")
        .and_then(Node::as_map)
        .unwrap_or_default()
    {
        let (Some(status), Some(response)) = (
            StatusPattern::parse(&entry.key),
            workspace.deref(&entry.value),
        ) else {
            continue;
        };
        for (media_type, media) in crate::types::media_choices(response) {
            let essence = crate::types::media_essence(&media_type);
            if crate::types::is_json(&essence) {
                found.push((status, essence, media.get("schema")));
            }
        }
    }
    found
}

/// The schema of the operation's request body, if it has one: of the
/// media type its type is read from (the first JSON one, else the first
/// declared, as `types` picks). The pointers are the spec's property
/// names, which are the JSON members, the form's field names and the
/// multipart part names alike.
/// The schema of the body the handler reads (JSON where there is one),
/// and whether that body is JSON.
fn body_schema<'w>(
    workspace: &'w Workspace,
    operation: &Operation<'w>,
) -> Option<(&'w Node, bool)> {
    let body = workspace.deref(operation.node.get("requestBody")?)?;
    let content = body.get("content")?.as_map()?;
    let chosen = content
        .iter()
        .find(|entry| crate::types::is_json(&entry.key))
        .or_else(|| content.first())?;
    Some((
        chosen.value.get("schema")?,
        crate::types::is_json(&chosen.key),
    ))
}

/// Each path, query and header parameter's name, place and schema (the
/// operation's replacing the path item's of the same name and place).
fn parameters<'w>(
    workspace: &'w Workspace,
    operation: &Operation<'w>,
) -> Vec<(&'w str, &'w str, &'w Node)> {
    let mut found: Vec<(&'w str, &'w str, &'w Node)> = Vec::new();
    for holder in [operation.path_item, operation.node] {
        for parameter in holder
            .get("parameters")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let Some(parameter) = workspace.deref(parameter) else {
                continue;
            };
            let (Some(name), Some(location), Some(schema)) = (
                parameter.get("name").and_then(Node::as_str),
                parameter.get("in").and_then(Node::as_str),
                parameter.get("schema"),
            ) else {
                continue;
            };
            if !matches!(location, "path" | "query" | "header") {
                continue;
            }
            let same = |(other, at, _): &(&str, &str, &Node)| {
                *at == location
                    && (other == &name
                        || (location == "header" && other.eq_ignore_ascii_case(name)))
            };
            match found.iter_mut().find(|seen| same(seen)) {
                Some(seen) => *seen = (name, location, schema),
                None => found.push((name, location, schema)),
            }
        }
    }
    found
}

struct Collector<'w> {
    workspace: &'w Workspace,
    found: Vec<ConstraintContext>,
    warnings: Vec<String>,
    unchecked: Vec<String>,
    /// The schemas on the way to the current one (a cycle stops there).
    path: HashSet<(u32, u32, u32)>,
    /// Where the value may also be null, beside what the schema being read
    /// allows (it is the one branch of a `oneOf`/`anyOf` but null): its
    /// `enum` and `const` then take null too.
    or_null_at: Option<String>,
    /// Where the schema being read is one of branches of distinct JSON
    /// types: its `enum` and `const`, which hold of any type, are not
    /// checked there (a value of another branch would break them).
    branch_at: Option<String>,
    /// The schemas whose unchecked keywords were looked for.
    reported: HashSet<(u32, u32, u32)>,
    /// Reading parameters: values that arrive as text, read as their
    /// declared scalar type or else as strings, so keywords that depend on
    /// which branch or which type a value is are not checked there.
    text: bool,
    /// Whether a union's branches may be told apart by a property's value
    /// (not in a form body, whose values are text).
    choosing: bool,
    /// The unions whose every branch's keywords were collected as
    /// `Check::Chosen`s, which need no warning.
    chosen: HashSet<(u32, u32, u32)>,
}

impl<'w> Collector<'w> {
    fn schema(&mut self, node: &'w Node, at: &str, depth: usize) {
        let Some(schema) = self.workspace.deref(node) else {
            return;
        };
        let id = node_key(schema);
        if depth > MAX_DEPTH || schema.as_map().is_none() || !self.path.insert(id) {
            return;
        }
        self.keywords(schema, at);
        for part in schema
            .get("allOf")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            self.schema(part, at, depth + 1);
        }
        // `anyOf: [{maxLength: 64}, {type: "null"}]`: one branch but null,
        // whose keywords hold whenever the value is not null (a keyword
        // of strings does not apply to null).
        for keyword in ["oneOf", "anyOf"] {
            let branches = self.branches_but_null(schema, keyword);
            if let [only] = branches.as_slice() {
                let all = schema
                    .get(keyword)
                    .and_then(Node::as_seq)
                    .map_or(0, <[Node]>::len);
                let outer = self.or_null_at.clone();
                if all > 1 || crate::types::is_nullable(schema) {
                    self.or_null_at = Some(at.to_string());
                }
                self.schema(only, at, depth + 1);
                self.or_null_at = outer;
            } else if !self.text && self.of_distinct_types(&branches) {
                // `anyOf: [{type: string, maxLength: 64}, {$ref: File}]`
                // (Stripe's expandable fields): a value of one type can
                // only be the branch of that type, and every keyword but
                // `enum` and `const` holds of its own type alone. Only the
                // scalar branches are followed: an object branch would
                // unfold the whole object graph below it (Stripe's `File`
                // expands `Account`, which expands …); its keywords are
                // named as not checked.
                let outer = self.branch_at.replace(at.to_string());
                let scalars: Vec<&'w Node> = branches
                    .into_iter()
                    .filter(|branch| self.is_scalar(branch))
                    .collect();
                for branch in scalars {
                    self.schema(branch, at, depth + 1);
                }
                self.branch_at = outer;
            } else if let Some(chosen) = self.chosen_by_property(&branches) {
                if self.chosen_branches(at, &branches, &chosen, depth) {
                    self.chosen.insert(id);
                }
            }
        }
        for entry in schema
            .get("properties")
            .and_then(Node::as_map)
            .unwrap_or_default()
        {
            self.schema(
                &entry.value,
                &format!("{at}/{}", escape(&entry.key)),
                depth + 1,
            );
        }
        if let Some(items) = schema.get("items").filter(|items| items.as_map().is_some()) {
            self.schema(items, &format!("{at}/*"), depth + 1);
        }
        // A map's values (`*` is every member, so only where no property
        // is declared beside them).
        if schema.get("properties").is_none() {
            if let Some(values) = schema
                .get("additionalProperties")
                .filter(|values| values.as_map().is_some())
            {
                self.schema(values, &format!("{at}/*"), depth + 1);
            }
        }
        // What a schema leaves unchecked is the same wherever it is met.
        if self.reported.insert(id) {
            self.unchecked(schema);
        }
        self.path.remove(&id);
    }

    /// The branches of `schema`'s `keyword` (`oneOf`, `anyOf`) but those
    /// that only allow null.
    fn branches_but_null(&self, schema: &'w Node, keyword: &str) -> Vec<&'w Node> {
        schema
            .get(keyword)
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter(|branch| {
                self.workspace
                    .deref(branch)
                    .is_none_or(|branch| !crate::types::is_null_schema(branch))
            })
            .collect()
    }

    /// How the objects of `branches` are told apart by one property's
    /// value (Adyen's `paymentMethod` by `type`), as the generated union
    /// reads them: each branch declares the property, directly or through
    /// `allOf`, as strings (`enum` or `const`) that no other branch
    /// allows. `None` for text, whose union is never chosen this way.
    fn chosen_by_property(&self, branches: &[&'w Node]) -> Option<ChosenBy> {
        if self.text || !self.choosing || branches.len() < 2 {
            return None;
        }
        let first = self.workspace.deref(branches[0])?;
        let mut candidates = Vec::new();
        property_names(self.workspace, first, 0, &mut candidates);
        'property: for property in candidates {
            let mut taken = HashSet::new();
            let mut values = Vec::new();
            for branch in branches {
                let Some(listed) = self
                    .workspace
                    .deref(branch)
                    .and_then(|branch| property_schema(self.workspace, branch, &property, 0))
                    .and_then(|schema| string_values(self.workspace, schema))
                else {
                    continue 'property;
                };
                if listed.is_empty() || !listed.iter().all(|value| taken.insert(value.clone())) {
                    continue 'property;
                }
                values.push(listed);
            }
            return Some(ChosenBy { property, values });
        }
        None
    }

    /// The keywords of each branch of a union chosen by a property, each
    /// branch's as one `Check::Chosen` at the union's pointer (their own
    /// pointers from the union's object). Whether every branch was read:
    /// not one that contains the union, nor one past the deepest nesting.
    fn chosen_branches(
        &mut self,
        at: &str,
        branches: &[&'w Node],
        chosen: &ChosenBy,
        depth: usize,
    ) -> bool {
        let outer_found = std::mem::take(&mut self.found);
        let outer_or_null = self.or_null_at.take();
        let outer_branch = self.branch_at.take();
        let mut checks = Vec::new();
        let mut every_branch = depth < MAX_DEPTH;
        for (branch, values) in branches.iter().zip(&chosen.values) {
            every_branch &= self
                .workspace
                .deref(branch)
                .is_some_and(|branch| !self.path.contains(&node_key(branch)));
            self.schema(branch, "", depth + 1);
            let inner = std::mem::take(&mut self.found);
            if inner.is_empty() {
                continue;
            }
            checks.push(format!(
                "Check::Chosen(&Chosen {{ property: {}, values: &[{}], constraints: &[{}] }})",
                rust_string(&chosen.property),
                values
                    .iter()
                    .map(|value| rust_string(value))
                    .collect::<Vec<_>>()
                    .join(", "),
                inner
                    .iter()
                    .map(|c| format!("Constraint {{ at: {}, check: {} }}", c.at, c.check))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        self.found = outer_found;
        self.or_null_at = outer_or_null;
        self.branch_at = outer_branch;
        self.record(at, checks);
        every_branch
    }

    /// `checks` at `at`, each once.
    fn record(&mut self, at: &str, checks: Vec<String>) {
        for check in checks {
            let context = ConstraintContext {
                at: rust_string(at),
                check,
            };
            if !self.found.contains(&context) {
                self.found.push(context);
            }
        }
    }

    /// Whether `branch` declares a JSON type other than object and array.
    fn is_scalar(&self, branch: &'w Node) -> bool {
        self.workspace
            .deref(branch)
            .and_then(|branch| branch.get("type"))
            .and_then(Node::as_str)
            .is_some_and(|json_type| !matches!(json_type, "object" | "array"))
    }

    /// Whether each of `branches` declares one JSON type and no two the
    /// same (an integer is a number).
    fn of_distinct_types(&self, branches: &[&'w Node]) -> bool {
        let mut seen = HashSet::new();
        branches.iter().all(|branch| {
            let Some(branch) = self.workspace.deref(branch) else {
                return false;
            };
            let declared = match branch.get("type").and_then(Node::as_str) {
                Some("integer") => Some("number"),
                Some(other) => Some(other),
                None if branch.get("properties").is_some() => Some("object"),
                None if branch.get("items").is_some() => Some("array"),
                None => None,
            };
            declared.is_some_and(|json_type| seen.insert(json_type))
        })
    }

    /// A warning for each keyword below `schema` that no table checks:
    /// those inside a `oneOf`/`anyOf` branch (which branch a value takes
    /// is its type's to say), and the keywords that have no check.
    fn unchecked(&mut self, schema: &'w Node) {
        let pointer = self.workspace.pointer_at(schema.span);
        for keyword in ["oneOf", "anyOf"] {
            let mut branches = self.branches_but_null(schema, keyword);
            if branches.len() < 2 {
                continue;
            }
            if !self.text && self.of_distinct_types(&branches) {
                branches.retain(|branch| !self.is_scalar(branch));
            } else if self.chosen.contains(&node_key(schema)) {
                // Each branch's keywords are checked where it is chosen.
                continue;
            }
            let mut inside = Vec::new();
            for branch in branches {
                keywords_within(self.workspace, branch, 0, &mut HashSet::new(), &mut inside);
            }
            inside.sort_unstable();
            inside.dedup();
            if !inside.is_empty() {
                self.unchecked.push(format!(
                    "#{pointer}: the {} inside its `{keyword}` branches {} not checked",
                    inside
                        .iter()
                        .map(|keyword| format!("`{keyword}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if inside.len() == 1 { "is" } else { "are" }
                ));
            }
        }
        let beside_properties = schema.get("properties").is_some();
        if let Some(values) = schema
            .get("additionalProperties")
            .filter(|_| beside_properties)
        {
            let mut inside = Vec::new();
            keywords_within(self.workspace, values, 0, &mut HashSet::new(), &mut inside);
            if !inside.is_empty() {
                self.unchecked.push(format!(
                    "#{pointer}: the keywords of `additionalProperties` beside `properties` are not \
                     checked"
                ));
            }
        }
        for keyword in UNCHECKED {
            if schema.get(keyword).is_some() {
                self.unchecked
                    .push(format!("#{pointer}: `{keyword}` is not checked"));
            }
        }
    }

    fn keywords(&mut self, schema: &'w Node, at: &str) {
        let limit = |keyword: &str| {
            schema
                .get(keyword)
                .and_then(|node| number_text(self.workspace, node))
        };
        let count = |keyword: &str| {
            schema
                .get(keyword)
                .and_then(as_number)
                .filter(|n| *n >= 0.0 && n.fract() == 0.0)
                .map(|n| n as u64)
        };
        let flag = |keyword: &str| schema.get(keyword).and_then(Node::as_bool) == Some(true);
        let mut checks: Vec<String> = Vec::new();
        // 3.0 writes `exclusiveMinimum: true` beside `minimum`; 3.1 a number.
        match (limit("minimum"), flag("exclusiveMinimum")) {
            (Some(limit), true) => {
                checks.push(format!("Check::ExclusiveMinimum({})", rust_string(&limit)))
            }
            (Some(limit), false) => checks.push(format!("Check::Minimum({})", rust_string(&limit))),
            _ => {}
        }
        match (limit("maximum"), flag("exclusiveMaximum")) {
            (Some(limit), true) => {
                checks.push(format!("Check::ExclusiveMaximum({})", rust_string(&limit)))
            }
            (Some(limit), false) => checks.push(format!("Check::Maximum({})", rust_string(&limit))),
            _ => {}
        }
        if let Some(limit) = limit("exclusiveMinimum") {
            checks.push(format!("Check::ExclusiveMinimum({})", rust_string(&limit)));
        }
        if let Some(limit) = limit("exclusiveMaximum") {
            checks.push(format!("Check::ExclusiveMaximum({})", rust_string(&limit)));
        }
        // JSON Schema's step is more than 0; another checks nothing.
        let step = limit("multipleOf").filter(|step| !step.starts_with('-'));
        let digits = step
            .as_deref()
            .and_then(Decimal::parse)
            .map_or(0, |step| step.significant_digits());
        if let Some(step) = step.filter(|_| (1..=MULTIPLE_OF_DIGITS).contains(&digits)) {
            checks.push(format!("Check::MultipleOf({})", rust_string(&step)));
        } else if digits > MULTIPLE_OF_DIGITS {
            self.warnings.push(format!(
                "#{}: a `multipleOf` of more than {MULTIPLE_OF_DIGITS} significant digits is not \
                 checked",
                self.workspace.pointer_at(schema.span)
            ));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Node::as_str) {
            match regex::Regex::new(pattern) {
                Ok(_) => checks.push(format!("Check::Pattern({})", rust_string(pattern))),
                Err(_) => self.warnings.push(format!(
                    "#{}: the pattern `{pattern}` is not one Rust's regex reads (lookaround or \
                     back-references?), so it is not checked",
                    self.workspace.pointer_at(schema.span)
                )),
            }
        }
        for (keyword, variant) in [
            ("minLength", "MinLength"),
            ("maxLength", "MaxLength"),
            ("minItems", "MinItems"),
            ("maxItems", "MaxItems"),
            ("minProperties", "MinProperties"),
            ("maxProperties", "MaxProperties"),
        ] {
            if let Some(n) = count(keyword) {
                checks.push(format!("Check::{variant}({n})"));
            }
        }
        if flag("uniqueItems") {
            checks.push("Check::UniqueItems".into());
        }
        let or_null = self.or_null_at.as_deref() == Some(at);
        let in_branch = self.branch_at.as_deref() == Some(at);
        // A parameter without a `type` is read as text: its listed numbers
        // would never match it.
        let untyped_text = self.text && schema.get("type").is_none();
        // A string enum or const is a Rust enum, which serde holds.
        let not_strings = |keyword: &&str| match schema.get(keyword) {
            Some(listed) => match listed.as_seq() {
                Some(values) => !values.iter().all(|value| value.as_str().is_some()),
                None => listed.as_str().is_none(),
            },
            None => false,
        };
        let any_type: Vec<&str> = ["enum", "const"]
            .into_iter()
            .filter(|keyword| (in_branch || untyped_text) && not_strings(keyword))
            .collect();
        if !any_type.is_empty() {
            self.unchecked.push(format!(
                "#{}: {} {} {} not checked",
                self.workspace.pointer_at(schema.span),
                any_type
                    .iter()
                    .map(|keyword| format!("`{keyword}`"))
                    .collect::<Vec<_>>()
                    .join(" and "),
                if in_branch {
                    "in a branch of a `oneOf`/`anyOf`"
                } else {
                    "of a parameter without a `type`, read as text,"
                },
                if any_type.len() == 1 { "is" } else { "are" }
            ));
        }
        let in_branch = in_branch || untyped_text;
        let json_text = |value: &Node| {
            // A listed number as written, like a limit.
            let json =
                number_text(self.workspace, value).unwrap_or_else(|| value.to_json().to_string());
            rust_string(&json)
        };
        // A string `const` is a one-variant Rust enum, which serde holds.
        if let Some(only) = schema
            .get("const")
            .filter(|only| only.as_str().is_none() && !in_branch)
        {
            match or_null {
                false => checks.push(format!("Check::Const({})", json_text(only))),
                true => checks.push(format!("Check::Enum(&[{}, \"null\"])", json_text(only))),
            }
        }
        // An enum of strings is a Rust enum, which serde holds.
        if let Some(values) = schema
            .get("enum")
            .and_then(Node::as_seq)
            .filter(|_| !in_branch)
        {
            if !values.iter().all(|value| value.as_str().is_some()) {
                let mut listed: Vec<String> = values.iter().map(json_text).collect();
                if or_null && !listed.iter().any(|value| value == "\"null\"") {
                    listed.push("\"null\"".to_string());
                }
                checks.push(format!("Check::Enum(&[{}])", listed.join(", ")));
            }
        }
        self.record(at, checks);
    }
}

/// A schema's place in the workspace, which tells it from every other.
fn node_key(schema: &Node) -> (u32, u32, u32) {
    (schema.span.file.0, schema.span.start, schema.span.end)
}

/// Which property tells a union's branches apart, and the values that
/// choose each branch, in the branches' order.
struct ChosenBy {
    property: String,
    values: Vec<Vec<String>>,
}

/// The names of the properties `schema` declares, directly or through
/// `allOf`, in the order written.
fn property_names(workspace: &Workspace, schema: &Node, depth: usize, names: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    for entry in schema
        .get("properties")
        .and_then(Node::as_map)
        .unwrap_or_default()
    {
        if !names.iter().any(|name| **name == *entry.key) {
            names.push(entry.key.to_string());
        }
    }
    for part in schema
        .get("allOf")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        if let Some(part) = workspace.deref(part) {
            property_names(workspace, part, depth + 1, names);
        }
    }
}

/// The schema of the property `name` that `schema` declares, directly or
/// through `allOf`.
fn property_schema<'w>(
    workspace: &'w Workspace,
    schema: &'w Node,
    name: &str,
    depth: usize,
) -> Option<&'w Node> {
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(property) = schema
        .get("properties")
        .and_then(|properties| properties.get(name))
    {
        return workspace.deref(property);
    }
    schema
        .get("allOf")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .find_map(|part| property_schema(workspace, workspace.deref(part)?, name, depth + 1))
}

/// The strings a property's schema allows, from its `enum` or `const`;
/// `None` where it allows anything else.
fn string_values(workspace: &Workspace, schema: &Node) -> Option<Vec<String>> {
    let schema = workspace.deref(schema)?;
    if let Some(only) = schema.get("const") {
        return Some(vec![only.as_str()?.to_string()]);
    }
    schema
        .get("enum")?
        .as_seq()?
        .iter()
        .map(|value| value.as_str().map(str::to_string))
        .collect()
}

/// Validation keywords the runtime has no check for: each one a schema
/// holds is a warning at generation (`format` is an annotation in JSON
/// Schema 2020-12 and OpenAPI, not listed).
const UNCHECKED: [&str; 13] = [
    "not",
    "if",
    "contains",
    "minContains",
    "maxContains",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "prefixItems",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// The validation keywords the tables check, as the spec names them.
const CHECKED: [&str; 17] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "enum",
    "const",
    "required",
    "additionalProperties",
];

/// The validation keywords within `schema` (its `$ref`s, properties,
/// items and branches followed, each schema once), into `found`.
fn keywords_within<'w>(
    workspace: &'w Workspace,
    node: &'w Node,
    depth: usize,
    seen: &mut HashSet<(u32, u32, u32)>,
    found: &mut Vec<&'static str>,
) {
    let Some(schema) = workspace.deref(node) else {
        return;
    };
    let id = (schema.span.file.0, schema.span.start, schema.span.end);
    let Some(entries) = schema.as_map() else {
        return;
    };
    if depth > MAX_DEPTH || !seen.insert(id) {
        return;
    }
    for entry in entries.iter() {
        if let Some(keyword) = CHECKED
            .iter()
            .chain(UNCHECKED.iter())
            .find(|k| **k == &*entry.key)
        {
            // `required` and a closed object are the types' own.
            if !matches!(*keyword, "required" | "additionalProperties") {
                found.push(keyword);
            }
        }
        match &*entry.key {
            "properties" => {
                for property in entry
                    .value
                    .as_map()
                    .map(|map| map.iter())
                    .into_iter()
                    .flatten()
                {
                    keywords_within(workspace, &property.value, depth + 1, seen, found);
                }
            }
            "items" | "additionalProperties" => {
                keywords_within(workspace, &entry.value, depth + 1, seen, found)
            }
            "allOf" | "oneOf" | "anyOf" => {
                for part in entry.value.as_seq().unwrap_or_default() {
                    keywords_within(workspace, part, depth + 1, seen, found);
                }
            }
            _ => {}
        }
    }
}

/// A numeric keyword's value as the spec writes it, JSON number text
/// (`0.01`, `9007199254740993`): the runtime compares by decimal value, so
/// the limit never passes through a float. A whole number is written as an
/// integer (`5.0` → `5`), which the runtime compares without reading
/// decimals; YAML's other spellings (`+5`, `0x10`) as the value they read
/// as. `None` for a value that is no number.
fn number_text(workspace: &Workspace, node: &Node) -> Option<String> {
    let file = workspace.file(node.span.file);
    let start = file.byte_offset(node.span.start as usize);
    let end = file.byte_offset(node.span.end as usize);
    // A quoted scalar's span holds its quotes, so it is never read here.
    let written = file.text.get(start..end).map(str::trim);
    let json = written
        .map(|text| text.strip_prefix('+').unwrap_or(text))
        .filter(|text| Decimal::parse(text).is_some());
    let text = match (&node.value, json) {
        (Value::Int(n), _) => n.to_string(),
        (Value::Float(_), Some(text)) => text.to_string(),
        // An integer too large for an `i64` is kept as its digits; no
        // other string is a number.
        (Value::Str(written), Some(text)) if is_integer_text(written) => text.to_string(),
        (Value::Float(n), None) if n.is_finite() => format!("{n:?}"),
        _ => return None,
    };
    Some(match text.split_once('.') {
        Some((whole, fraction)) if fraction.bytes().all(|b| b == b'0') => whole.to_string(),
        _ => text,
    })
}

/// Whether `text` is an integer with at most one sign, as the parser
/// keeps one too large for an `i64`.
fn is_integer_text(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The most significant digits of a `multipleOf` the runtime divides by.
const MULTIPLE_OF_DIGITS: usize = 19;

fn as_number(node: &Node) -> Option<f64> {
    match &node.value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(n) => Some(*n),
        _ => node.to_json().as_f64(),
    }
}

/// A JSON pointer segment.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body table of the one operation of a spec whose body schema is
    /// `amount` (YAML or JSON text).
    fn table(spec: &str, file: &str) -> OperationConstraints {
        let path = std::path::Path::new(file);
        let workspace = Workspace::from_text(path, file.into(), spec.into()).unwrap();
        let operations = idemgen_spec::operations::operations(&workspace);
        collect(&workspace, &operations[0], None)
    }

    fn yaml(amount: &str) -> String {
        format!(
            "openapi: 3.1.0\ninfo: {{title: t, version: '1'}}\npaths:\n  /pay:\n    post:\n      \
             operationId: pay\n      requestBody:\n        content:\n          application/json:\n            \
             schema:\n              type: object\n              properties:\n                amount: {amount}\n      \
             responses:\n        '200': {{description: ok}}\n"
        )
    }

    fn checks(found: &OperationConstraints) -> Vec<&str> {
        found.body.iter().map(|c| c.check.as_str()).collect()
    }

    #[test]
    fn limits_are_written_as_the_spec_writes_them() {
        let found = table(
            &yaml(
                "{type: number, minimum: 0.01, maximum: 99999999999999999999, multipleOf: 0.010, \
                 exclusiveMaximum: 1e21}",
            ),
            "openapi.yaml",
        );
        assert_eq!(
            checks(&found),
            [
                r#"Check::Minimum("0.01")"#,
                r#"Check::Maximum("99999999999999999999")"#,
                r#"Check::ExclusiveMaximum("1e21")"#,
                r#"Check::MultipleOf("0.010")"#,
            ]
        );
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    }

    #[test]
    fn whole_limits_are_integers_and_other_spellings_their_values() {
        let found = table(
            &yaml("{type: integer, minimum: 5.0, maximum: +9007199254740993, multipleOf: 0x10}"),
            "openapi.yaml",
        );
        assert_eq!(
            checks(&found),
            [
                r#"Check::Minimum("5")"#,
                r#"Check::Maximum("9007199254740993")"#,
                r#"Check::MultipleOf("16")"#,
            ]
        );
        let json = r#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/pay": {"post": {
            "operationId": "pay", "requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "properties": {"amount": {"type": "number", "minimum": 0,
            "exclusiveMinimum": true, "maximum": 1E+3, "multipleOf": 2.50}}}}}},
            "responses": {"200": {"description": "ok"}}}}}}"#;
        let found = table(json, "openapi.json");
        assert_eq!(
            checks(&found),
            [
                r#"Check::ExclusiveMinimum("0")"#,
                r#"Check::Maximum("1E+3")"#,
                r#"Check::MultipleOf("2.50")"#,
            ]
        );
    }

    #[test]
    fn listed_numbers_are_written_as_the_spec_writes_them() {
        let found = table(
            &yaml("{type: number, enum: [0.10, 99999999999999999999, 5.0, '7', [1.5]]}"),
            "openapi.yaml",
        );
        assert_eq!(
            checks(&found),
            [r#"Check::Enum(&["0.10", "99999999999999999999", "5", "\"7\"", "[1.5]"])"#]
        );
    }

    #[test]
    fn answers_are_listed_by_response_and_media_type_where_one_has_keywords() {
        let spec = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      \
             operationId: pay\n      responses:\n        '200':\n          description: ok\n          \
             content:\n            application/json; charset=utf-8:\n              schema: {type: object, \
             properties: {amount: {type: integer, minimum: 1}}}\n            text/csv: {schema: {type: string, \
             maxLength: 9}}\n        '201':\n          description: created\n          content:\n            \
             application/json: {schema: {type: object}}\n        '202':\n          description: none\n        \
             '409': {description: any JSON, content: {application/json: {}}}\n        \
             4XX:\n          description: problem\n          content:\n            application/problem+json: \
             {schema: {type: object}}\n        default:\n          description: any\n          content:\n            \
             application/json: {schema: {type: object, properties: {code: {type: string, maxLength: 8}}}}\n";
        let found = table(spec, "openapi.yaml");
        let listed: Vec<(&str, &str, Vec<&str>)> = found
            .answers
            .iter()
            .map(|answer| {
                let checks = answer
                    .constraints
                    .iter()
                    .map(|c| c.check.as_str())
                    .collect();
                (answer.status.as_str(), answer.media_type.as_str(), checks)
            })
            .collect();
        // 201, 409 (JSON without a schema) and 4XX declare no keywords
        // but keep their answers from `default`'s; 202 has no body;
        // text/csv is not JSON.
        assert_eq!(
            listed,
            [
                (
                    r#""200""#,
                    r#""application/json""#,
                    vec![r#"Check::Minimum("1")"#]
                ),
                (r#""201""#, r#""application/json""#, vec![]),
                (r#""409""#, r#""application/json""#, vec![]),
                (r#""4XX""#, r#""application/problem+json""#, vec![]),
                (
                    r#""default""#,
                    r#""application/json""#,
                    vec![r#"Check::MaxLength(8)"#]
                ),
            ]
        );
        let plain = table(&yaml("{type: integer, minimum: 1}"), "openapi.yaml");
        assert!(plain.answers.is_empty(), "no response has keywords");
    }

    #[test]
    fn answers_held_to_the_same_keywords_share_one_table() {
        let answer = |schema_name: Option<&str>, checks: &[&str]| AnswerContext {
            status: r#""200""#.into(),
            media_type: r#""application/json""#.into(),
            constraints: checks
                .iter()
                .map(|check| ConstraintContext {
                    at: r#""/a""#.into(),
                    check: check.to_string(),
                })
                .collect(),
            schema_name: schema_name.map(str::to_string),
            table: None,
        };
        let mut pay = vec![
            answer(Some("Error"), &["Check::MaxLength(9)"]),
            answer(None, &[]),
        ];
        let mut refund = vec![
            answer(Some("Error"), &["Check::MaxLength(9)"]),
            answer(None, &["Check::Minimum(\"1\")"]),
        ];
        let mut other = vec![answer(Some("Other"), &["Check::Minimum(\"1\")"])];
        let tables = share_answer_tables(
            [
                ("pay", "pay", &mut pay),
                ("refund", "refund", &mut refund),
                ("x", "x", &mut other),
            ]
            .into_iter(),
        );
        let names: Vec<&str> = tables.iter().map(|table| table.name.as_str()).collect();
        assert_eq!(names, ["ERROR_CHECKS", "REFUND_200_CHECKS"]);
        assert_eq!(pay[0].table.as_deref(), Some("ERROR_CHECKS"));
        assert_eq!(pay[1].table, None, "no keywords, no table");
        assert_eq!(refund[0].table.as_deref(), Some("ERROR_CHECKS"));
        assert_eq!(refund[1].table.as_deref(), Some("REFUND_200_CHECKS"));
        assert!(!tables[0].shared, "one schema's keywords");
        assert!(tables[1].shared, "`Other` has the inline answer's keywords");
        assert_eq!(other[0].table.as_deref(), Some("REFUND_200_CHECKS"));
    }

    #[test]
    fn a_const_of_another_type_than_string_is_checked() {
        let found = table(&yaml("{type: integer, const: 2}"), "openapi.yaml");
        assert_eq!(checks(&found), [r#"Check::Const("2")"#]);
        let found = table(
            &yaml("{type: object, const: {v: [1, true]}}"),
            "openapi.yaml",
        );
        assert_eq!(checks(&found), [r#"Check::Const("{\"v\":[1,true]}")"#]);
        // A string const is a one-variant enum, which serde holds.
        let found = table(&yaml("{type: string, const: EUR}"), "openapi.yaml");
        assert!(checks(&found).is_empty(), "{:?}", checks(&found));
    }

    #[test]
    fn a_maps_values_are_checked_where_no_property_is_declared() {
        let found = table(
            &yaml("{type: object, additionalProperties: {type: string, maxLength: 8}}"),
            "openapi.yaml",
        );
        assert_eq!(found.body[0].at, r#""/amount/*""#);
        assert_eq!(checks(&found), ["Check::MaxLength(8)"]);
        // Beside properties, `*` would hold the declared ones to it too.
        let found = table(
            &yaml(
                "{type: object, properties: {a: {type: string}}, additionalProperties: {maxLength: 8}}",
            ),
            "openapi.yaml",
        );
        assert!(checks(&found).is_empty(), "{:?}", checks(&found));
    }

    #[test]
    fn a_union_chosen_by_a_property_checks_each_branch_where_it_is_chosen() {
        // `type` through `allOf` in one branch, as a `const` in another.
        let found = table(
            &yaml(
                "{oneOf: [\
                 {type: object, properties: {type: {type: string, enum: [scheme, card]}, \
                 number: {type: string, maxLength: 19}}}, \
                 {allOf: [{type: object, properties: {type: {const: ideal}}}, \
                 {type: object, properties: {issuer: {type: string, minLength: 4}}}]}, \
                 {type: object, properties: {type: {enum: [paypal]}}}]}",
            ),
            "openapi.yaml",
        );
        assert_eq!(
            checks(&found),
            [
                r#"Check::Chosen(&Chosen { property: "type", values: &["scheme", "card"], constraints: &[Constraint { at: "/number", check: Check::MaxLength(19) }] })"#,
                r#"Check::Chosen(&Chosen { property: "type", values: &["ideal"], constraints: &[Constraint { at: "/issuer", check: Check::MinLength(4) }] })"#,
            ]
        );
        assert!(found.body.iter().all(|c| c.at == r#""/amount""#));
        assert!(found.unchecked.is_empty(), "{:?}", found.unchecked);
        // A value two branches allow: which branch it is cannot be told by
        // the property, so their keywords stay unchecked, and named.
        let found = table(
            &yaml(
                "{oneOf: [\
                 {type: object, properties: {type: {enum: [scheme, card]}, number: {maxLength: 19}}}, \
                 {type: object, properties: {type: {enum: [card]}, issuer: {minLength: 4}}}]}",
            ),
            "openapi.yaml",
        );
        assert!(checks(&found).is_empty(), "{:?}", checks(&found));
        assert_eq!(found.unchecked.len(), 1, "{:?}", found.unchecked);
    }

    #[test]
    fn a_union_chosen_by_a_property_is_not_chosen_in_a_form_nor_through_itself() {
        let union = "{anyOf: [\
                     {type: object, properties: {kind: {enum: [a]}, n: {type: integer, maximum: 5}}}, \
                     {type: object, properties: {kind: {enum: [b]}, m: {type: string, maxLength: 2}}}]}";
        // An `anyOf` in JSON is chosen as a `oneOf` is.
        let found = table(&yaml(union), "openapi.yaml");
        assert_eq!(checks(&found).len(), 2, "{:?}", checks(&found));
        assert!(found.unchecked.is_empty(), "{:?}", found.unchecked);
        // In a form its values are text: not chosen, and named unchecked.
        let form = yaml(union).replace("application/json", "application/x-www-form-urlencoded");
        let found = table(&form, "openapi.yaml");
        assert!(checks(&found).is_empty(), "{:?}", checks(&found));
        assert_eq!(found.unchecked.len(), 1, "{:?}", found.unchecked);
        // A union met inside one of its own branches: that branch is not
        // read again there, so the union is named unchecked.
        let spec = yaml("{$ref: '#/components/schemas/A'}").replace(
            "responses:\n        '200': {description: ok}\n",
            "responses:\n        '200': {description: ok}\ncomponents:\n  schemas:\n    \
             A: {type: object, properties: {kind: {const: a}, n: {maxLength: 3}, inner: {$ref: '#/components/schemas/U'}}}\n    \
             B: {type: object, properties: {kind: {const: b}, m: {maxLength: 2}}}\n    \
             U: {oneOf: [{$ref: '#/components/schemas/A'}, {$ref: '#/components/schemas/B'}]}\n",
        );
        let found = table(&spec, "openapi.yaml");
        assert_eq!(
            checks(&found),
            [
                "Check::MaxLength(3)",
                r#"Check::Chosen(&Chosen { property: "kind", values: &["b"], constraints: &[Constraint { at: "/m", check: Check::MaxLength(2) }] })"#,
            ]
        );
        assert_eq!(found.unchecked.len(), 1, "{:?}", found.unchecked);
    }

    #[test]
    fn keywords_no_table_checks_are_named() {
        let found = table(
            &yaml(
                "{anyOf: [{type: object, properties: {a: {type: integer, minimum: 1}}}, \
                 {type: object, properties: {b: {type: string, enum: [x, 'y'], maxLength: 3}}}], \
                 not: {const: 0}}",
            ),
            "openapi.yaml",
        );
        assert!(checks(&found).is_empty(), "{:?}", checks(&found));
        assert_eq!(
            found.unchecked,
            [
                "#/paths/~1pay/post/requestBody/content/application~1json/schema/properties/amount: \
                 the `enum`, `maxLength`, `minimum` inside its `anyOf` branches are not checked",
                "#/paths/~1pay/post/requestBody/content/application~1json/schema/properties/amount: \
                 `not` is not checked",
            ]
        );
        // Branches of an integer and a string: each holds its own.
        let found = table(
            &yaml(
                "{anyOf: [{type: integer, minimum: 1}, {type: string, enum: [now], maxLength: 3}]}",
            ),
            "openapi.yaml",
        );
        assert_eq!(
            checks(&found),
            [r#"Check::Minimum("1")"#, "Check::MaxLength(3)"]
        );
        assert!(found.unchecked.is_empty(), "{:?}", found.unchecked);
        // One branch but null: its keywords are checked.
        let found = table(
            &yaml("{anyOf: [{type: string, maxLength: 3}, {type: 'null'}]}"),
            "openapi.yaml",
        );
        assert_eq!(checks(&found), ["Check::MaxLength(3)"]);
        assert!(found.unchecked.is_empty(), "{:?}", found.unchecked);
        // Null is still a value of the union where it lists others.
        let found = table(
            &yaml("{anyOf: [{type: integer, enum: [1, 2]}, {type: 'null'}]}"),
            "openapi.yaml",
        );
        assert_eq!(checks(&found), [r#"Check::Enum(&["1", "2", "null"])"#]);
        let found = table(&yaml("{oneOf: [{const: 7}]}"), "openapi.yaml");
        assert_eq!(checks(&found), [r#"Check::Const("7")"#]);
        // Branches of distinct types (Stripe's expandable field: an id or
        // the object): each scalar keyword holds of its own type alone,
        // but an `enum`, which holds of every type.
        let found = table(
            &yaml(
                "{anyOf: [{type: string, maxLength: 5000}, {type: object, properties: {size: \
                 {type: integer, minimum: 0}}}, {type: integer, enum: [1, 2]}]}",
            ),
            "openapi.yaml",
        );
        // The object branch is not unfolded: its keywords are named.
        assert_eq!(checks(&found), ["Check::MaxLength(5000)"]);
        assert_eq!(found.unchecked.len(), 2, "{:?}", found.unchecked);
        assert!(
            found.unchecked[0].ends_with("`enum` in a branch of a `oneOf`/`anyOf` is not checked"),
            "{:?}",
            found.unchecked
        );
        assert!(
            found.unchecked[1]
                .ends_with("the `minimum` inside its `anyOf` branches is not checked"),
            "{:?}",
            found.unchecked
        );
        // Branches without keywords are nothing to say.
        let found = table(
            &yaml("{oneOf: [{type: integer}, {type: string}]}"),
            "openapi.yaml",
        );
        assert!(found.unchecked.is_empty(), "{:?}", found.unchecked);
    }

    /// Parameters arrive as text, read as their declared scalar or else
    /// as strings: a keyword that depends on which branch or which JSON
    /// type a value is would refuse valid requests there, so it is named,
    /// not checked. A nullable branch takes null.
    #[test]
    fn text_parameters_and_nullable_branches_refuse_no_valid_value() {
        let spec = "openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /pay:
    post:
      operationId: pay
      parameters:
        - {name: x, in: query, schema: {anyOf: [{type: integer}, {type: boolean}, {type: string, pattern: '^[a-z]+$'}]}}
        - {name: u, in: query, schema: {const: 2}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                level: {nullable: true, oneOf: [{$ref: '#/components/schemas/Level'}]}
      responses:
        '200': {description: ok}
components:
  schemas:
    Level: {type: integer, enum: [1, 2]}
";
        let found = table(spec, "openapi.yaml");
        assert!(found.params.is_empty(), "{:?}", found.params);
        assert_eq!(checks(&found), [r#"Check::Enum(&["1", "2", "null"])"#]);
        assert!(
            found.unchecked.iter().any(|place| place.ends_with(
                "`const` of a parameter without a `type`, read as text, is not checked"
            )),
            "{:?}",
            found.unchecked
        );
    }

    #[test]
    fn strings_are_not_limits() {
        let found = table(
            &yaml(
                "{type: integer, minimum: ++5, maximum: '7', exclusiveMinimum: +-5, multipleOf: \"2\"}",
            ),
            "openapi.yaml",
        );
        assert!(checks(&found).is_empty(), "{:?}", checks(&found));
    }

    #[test]
    fn a_step_the_runtime_cannot_divide_by_is_a_warning() {
        let found = table(
            &yaml("{type: number, multipleOf: 0.12345678901234567890123}"),
            "openapi.yaml",
        );
        assert!(checks(&found).is_empty());
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(
            found.warnings[0].contains("`multipleOf` of more than 19 significant digits"),
            "{:?}",
            found.warnings
        );
    }
}
