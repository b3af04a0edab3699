//! `lint --fix` adds what a spec lacks and keeps what it says: a value the
//! author wrote is changed only where it contradicts the contract the
//! author wrote, never to fit a contract the fix itself invented.

use idemgen_lint::LintOptions;
use idemgen_lint::fix_loop::fix_document;

use crate::support;

/// Found by the `fix` fuzz target: an `Idempotency-Key` header whose
/// schema spells its keys (`pay:{date}:{uuid}`) and no `x-idempotency`
/// block. The fix guessed a template of its own (`on-pay:{uuid}`) and, in
/// its next pass, rewrote the author's `pattern` to match it.
#[test]
fn a_key_pattern_the_author_wrote_becomes_the_template_not_overwritten() {
    let pattern = "^pay:[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]):[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";
    let spec = format!(
        r#"openapi: 3.1.0
info: {{title: Payments, version: "1"}}
paths:
  /pay:
    post:
      operationId: onPay
      parameters:
        - name: Idempotency-Key
          in: header
          required: true
          schema: {{type: string, maxLength: 64, pattern: "{pattern}"}}
      responses:
        "200": {{description: ok}}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, &spec).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), true).unwrap();
    let fixed = &outcome.files[0].after;
    assert!(
        fixed.contains(&format!("pattern: \"{pattern}\"")),
        "the author's pattern is kept:\n{fixed}"
    );
    assert!(
        fixed.contains("format: pay:{date}:{uuid}")
            || fixed.contains("format: \"pay:{date}:{uuid}\""),
        "the contract's template is the one the pattern spells:\n{fixed}"
    );
}

/// Found by the `fix` fuzz target: in `server: {max-processing:!3s}` the
/// one key (`max-processing:!3s`, a plain scalar: no blank after the colon)
/// has no value, and the fix that adds `max-processing` wrote it after the
/// closing brace: `{max-processing:!3s}, max-processing: 30s`, which no
/// longer loads. Text added to a flow mapping goes inside its braces.
#[test]
fn an_entry_added_to_a_flow_mapping_whose_last_key_has_no_value_stays_inside_it() {
    let spec = r#"openapi: 3.1.0
info: {title: Payments, version: "1"}
x-idempotency:
  client: {timeout: 5s, retries: [200ms, 800ms]}
  server: {max-processing:!3s}
paths:
  /pay:
    post:
      operationId: onPay
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      responses:
        "200": {description: ok}
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, spec).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), true)
        .unwrap_or_else(|error| panic!("a fix wrote text that does not load: {}", error.message));
    let fixed = &outcome.files[0].after;
    let server = fixed.lines().find(|line| line.contains("server:")).unwrap();
    assert!(server.trim_end().ends_with('}'), "{server}");
}

/// Found by the `fix` fuzz target: when the operation that gets a contract
/// ends the file, and so does the document's root mapping (no `info` to
/// write the document's defaults after), the fix's two insertions land at
/// one offset; they were applied so that the document's block came first,
/// the operation's block then sat under it, and the text did not load.
#[test]
fn two_blocks_inserted_at_the_end_of_the_file_keep_their_order() {
    let with_key = r#"openapi: 3.1.0
paths:
  /payouts:
    post:
      operationId: createPayout
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      responses:
        "201": {description: created}
"#;
    // Without a key: the fix adds the header parameter too, a third
    // insertion at the same offset.
    let without_key = with_key.replace(
        "      parameters:\n        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}\n",
        "",
    );
    assert_ne!(without_key, with_key);
    for spec in [with_key.to_string(), without_key] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("openapi.yaml");
        std::fs::write(&path, &spec).unwrap();
        let outcome = fix_document(&path, &LintOptions::default(), true).unwrap_or_else(|error| {
            panic!(
                "a fix wrote text that does not load: {}\n{}",
                error.message,
                error.text.unwrap_or_default()
            )
        });
        let fixed = &outcome.files[0].after;
        let operation_block = fixed
            .find("      x-idempotency:")
            .expect("the operation's block");
        let document_block = fixed
            .find("\nx-idempotency:")
            .expect("the document's block");
        assert!(operation_block < document_block, "{fixed}");
    }
}

/// A spec whose one POST takes an `Idempotency-Key` header with `schema`
/// and no `x-idempotency` block.
fn key_header_with_schema(schema: &str) -> String {
    format!(
        r#"openapi: 3.1.0
info: {{title: Payouts, version: "1"}}
paths:
  /payouts:
    post:
      operationId: createPayout
      parameters:
        - {{name: Idempotency-Key, in: header, required: true, schema: {schema}}}
      responses:
        "200": {{description: ok}}
"#
    )
}

/// Found by the `fix` fuzz target (its known `maxLength` case): a key
/// schema whose `maxLength` no contract can take as `key.max-length` (not
/// an integer, above 65535, or wider than an `allOf` branch's), or whose
/// `pattern` spells no key template. The contract fix guessed a template
/// and length, and `key-schema-mismatch`'s fix then overwrote the author's
/// `maxLength` or `pattern` with the guess. The guess may no longer
/// contradict the schema: where no contract agrees with it, the finding is
/// left for the author, unfixed, and the schema is kept.
#[test]
fn a_key_schema_no_contract_agrees_with_is_kept_and_its_finding_left_unfixed() {
    for schema in [
        "{type: string, maxLength: 64.0}",
        "{type: string, maxLength: \"64\"}",
        "{type: string, maxLength: 70000}",
        "{type: string, maxLength: 100, allOf: [{maxLength: 64}]}",
        "{type: string, pattern: \"^[a-z]+$\"}",
        "{type: string, pattern: 5}",
        // The pattern spells `pay:{date}:{uuid}` (45 characters), longer
        // than the schema lets a key be.
        "{type: string, maxLength: 40, pattern: \"^pay:[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]):[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$\"}",
    ] {
        let spec = key_header_with_schema(schema);
        let fixed = support::fix_keeping_the_rest("openapi.yaml", &spec);
        assert_eq!(fixed, spec, "nothing to fix without contradicting {schema}");
    }
}

/// The contract fix takes a key schema's integer `maxLength` as its
/// `key.max-length` (and fits its guessed template in it), so the schema
/// stays as written and only gains the template's `pattern`.
#[test]
fn a_key_schema_max_length_the_author_wrote_becomes_the_contract_max_length() {
    let spec = key_header_with_schema("{type: string, maxLength: 64}");
    let fixed = support::fix_keeping_the_rest("openapi.yaml", &spec);
    assert!(fixed.contains("max-length: 64"), "{fixed}");
    assert!(fixed.contains("maxLength: 64"), "{fixed}");
    assert!(!fixed.contains("maxLength: 128"), "{fixed}");
}

/// The `fix` fuzz target's untriaged `window` case, a real loss: one
/// operation has the author's contract, `window: 10s`, and the document
/// states no timeouts (`window-missing`, which no fix can settle); another
/// POST gets a contract from `--unsafe-fixes`. That fix wrote its guessed
/// timeouts into the document's block, which the author's contract merges
/// too, and the next pass rewrote the author's window (to 2m14s) to fit
/// the guess. What the new contract needs now stays in its own block (as
/// placeholders: the fix guesses no timeouts).
#[test]
fn guessed_timeouts_do_not_rewrite_a_window_the_author_wrote() {
    let pattern = "^pay:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";
    let spec = format!(
        r#"openapi: 3.1.0
info: {{title: Payments, version: "1"}}
paths:
  /pay:
    post:
      operationId: pay
      x-idempotency:
        key: {{in: header, name: Idempotency-Key, format: "pay:{{uuid}}"}}
        window: 10s
      parameters:
        - {{name: Idempotency-Key, in: header, required: true, schema: {{type: string, pattern: "{pattern}", maxLength: 128}}}}
      responses:
        "200": {{description: ok}}
        "400": {{description: missing key}}
        "409": {{description: conflict}}
        "429": {{description: in progress, headers: {{Retry-After: {{required: true, schema: {{type: integer, minimum: 1}}}}}}}}
  /payouts:
    post:
      operationId: createPayout
      responses:
        "200": {{description: ok}}
"#
    );
    let fixed = support::fix_keeping_the_rest("openapi.yaml", &spec);
    assert!(fixed.contains("        window: 10s\n"), "{fixed}");
    assert!(!fixed.contains("\nx-idempotency:"), "{fixed}");
    let payouts = &fixed[fixed.find("/payouts:").unwrap()..];
    // The document states no timeouts and the command line gave none:
    // the new contract holds placeholders, not guesses.
    for field in ["client.timeout", "server.max-processing", "window"] {
        let placeholder = idemgen_spec::contract::placeholder::text(field);
        assert!(payouts.contains(placeholder), "{field}: {fixed}");
    }
}

/// Found by the `fix` fuzz target (its known `#` case): text that looks
/// like JSON but is YAML (the strict JSON reader refuses the comments),
/// with a comment after a value inside a flow mapping. The parser's span
/// of that value runs on over the comment, so the entry the fix added
/// after it (the document's new block, the operation's) was commented
/// out, and the fixed text did not load. Added text now goes after the
/// value's own text, before the comment.
#[test]
fn an_entry_added_after_a_flow_value_with_a_comment_is_not_commented_out() {
    let spec = r#"{"openapi": "3.1.0",
 "info": {"title": "Payments", "version": "1"} # the API
 ,"paths": {"/pay": {"post": {"operationId": "onPay",
   "responses": {"200": {"description": "ok"}} # answers
   , "parameters": [{"name": "Idempotency-Key", "in": "header", "required": true, "schema": {"type": string}} # the key
   ]}}}}
"#;
    let fixed = support::fix_keeping_the_rest("openapi.json", spec);
    assert!(fixed.contains("# the API\n"), "{fixed}");
    assert!(fixed.contains("# answers\n"), "{fixed}");
    assert!(fixed.contains("# the key\n"), "{fixed}");
    let tree = idemgen_spec::parse_tree("openapi.json", &fixed)
        .unwrap()
        .to_json();
    assert!(
        tree["x-idempotency"]["client"]["timeout"].is_string(),
        "{fixed}"
    );
    assert!(
        tree["paths"]["/pay"]["post"]["x-idempotency"]["window"].is_string(),
        "{fixed}"
    );
}

/// A value whose text holds ` #` without a comment (a block scalar, a
/// quoted scalar after a tag) ends where its text ends: an entry added
/// after it goes after all of it.
#[test]
fn an_entry_added_after_a_block_scalar_holding_a_hash_goes_after_it() {
    let spec = r#"openapi: 3.1.0
info: {title: Payments, version: "1"}
paths:
  /pay:
    post:
      operationId: onPay
      responses:
        "200": {description: ok}
      summary: !!str "pay # now"
      description: |
        Pays. # not a comment
        Twice is once.
"#;
    let fixed = support::fix_keeping_the_rest("openapi.yaml", spec);
    assert!(
        fixed.contains("        Pays. # not a comment\n        Twice is once.\n"),
        "{fixed}"
    );
}

/// Found by the `fix` fuzz target: a `\r` not followed by `\n` (here
/// before a vertical tab) is a line break to YAML, and was not to the fix
/// engine, which counted lines by `\n`; a block it added after the line
/// went into the middle of what YAML reads as two lines, and the fixed
/// text did not load. The engine now reads such a `\r` as a line break
/// too, and a file whose lines end in `\r` alone gets its fixes with
/// lines ended the same way. (The fuzzed input itself holds `paths`
/// twice, so it now gets no fix for that reason, `duplicate-key`; the two
/// specs after it, YAML and JSON, check the line breaks.)
#[test]
fn a_lone_carriage_return_is_a_line_break_to_the_fix_engine_too() {
    let spec = concat!(
        "openapi: 3.1.0\r\n",
        "true:\r\n",
        "  title: CRLF line ends\r\n",
        "  version: \"   post:\r\n",
        "      operationId: pay\r\n",
        "     0\"\r\n",
        "paths:\r\n",
        "  /pay:\r\n",
        "    post:\r\n",
        "      operationId: payF line ends\r\u{b}  version: \"1\"\r\n",
        "paths:\r\n",
        "  /pay:\r\n",
        "    p\r\n",
        "      #RLF line ends\r\u{b}  version: \"1\"\r\n",
        "paths:\r\n",
        "  /pay:\r\n",
        "    post:\r\n",
        "      operationIscription: ok\r\n",
    );
    support::fix_keeping_the_rest("openapi.yaml", spec);

    let yaml = "openapi: 3.1.0\rinfo: {title: t, version: '1'}\rpaths:\r  /pay:\r    post:\r      operationId: pay\r      x-idempotency:\r        key: {in: header, name: Idempotency-Key, format: '{uuid}'}\r        window: 1s\r      responses:\r        '200': {description: ok}\r";
    let json = "{\r  \"openapi\": \"3.1.0\",\r  \"info\": {\"title\": \"t\", \"version\": \"1\"},\r  \"paths\": {\r    \"/pay\": {\r      \"post\": {\r        \"operationId\": \"pay\",\r        \"x-idempotency\": {\"key\": {\"in\": \"header\", \"name\": \"Idempotency-Key\", \"format\": \"{uuid}\"}, \"window\": \"1s\"},\r        \"responses\": {\"200\": {\"description\": \"ok\"}}\r      }\r    }\r  }\r}\r";
    for (name, spec) in [("openapi.yaml", yaml), ("openapi.json", json)] {
        let fixed = support::fix_keeping_the_rest(name, spec);
        assert!(fixed.len() > spec.len() + 500, "{name}: no fix applied");
        assert!(
            !fixed.contains('\n'),
            "{name}: a line ends in \\n:\n{fixed}"
        );
    } // A file that mixes them: each added line ends as the line it
    // follows, so it keeps the one `\n` and the one `\r\n` it had.
    let mixed = yaml
        .replacen('\r', "\n", 1)
        .replace("\r  /pay", "\r\n  /pay");
    let fixed = support::fix_keeping_the_rest("openapi.yaml", &mixed);
    assert!(fixed.len() > mixed.len() + 500, "no fix applied");
    assert_eq!(fixed.matches('\n').count(), 2, "{fixed:?}");
    assert_eq!(fixed.matches("\r\n").count(), 1, "{fixed:?}");
}

/// Found by the `fix` fuzz target: an operation written as an empty flow
/// mapping (`post: {}`) gets both its `x-idempotency` block and its key
/// parameter from one fix; both went in right after `{`, with no comma
/// between them, and the fixed text did not load.
#[test]
fn two_entries_added_to_an_empty_flow_mapping_are_separated() {
    let spec = r#"openapi: 3.1.0
info: {title: Payments, version: "1"}
paths:
  /payouts:
    post: {}
"#;
    let fixed = support::fix_keeping_the_rest("openapi.yaml", spec);
    let tree = idemgen_spec::parse_tree("openapi.yaml", &fixed)
        .unwrap()
        .to_json();
    let operation = &tree["paths"]["/payouts"]["post"];
    assert!(operation["x-idempotency"].is_object(), "{fixed}");
    assert!(operation["parameters"].is_array(), "{fixed}");
}

/// Found by the `fix` fuzz target: a mangled copy of a broken example
/// whose root has `paths:` twice. The findings came from the copy the tree
/// keeps, the fixes' edits landed in the other, so each pass offered them
/// again and fixing stopped unfinished. A file with a duplicate key now
/// gets no fix (the `duplicate-key` error says to settle it first); the
/// small spec beside it is the same shape, written to be read.
#[test]
fn a_file_with_a_duplicate_key_gets_no_fix() {
    for spec in [
        include_str!("found/duplicate-paths.yaml"),
        include_str!("found/duplicate-paths-small.yaml"),
    ] {
        let fixed = support::fix_keeping_the_rest("openapi.yaml", spec);
        assert_eq!(fixed, spec, "a file with a duplicate key was edited");
    }
}

/// Found by the `fix` fuzz target: a one-line flow operation whose last
/// entry has no value (`{operationId: }`) and a comment after it; later,
/// one whose key has blanks before its colon (`{operatioInd  :}`), where
/// the parser places the empty value at the colon and the new entries
/// went before it.
#[test]
fn a_contract_added_to_a_flow_operation_with_an_empty_value_loads() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/flow-operation-empty-value.yaml"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/flow-key-with-blanks-before-its-colon.yaml"),
    );
}

/// Found by the `fix` fuzz target: a block mapping whose last entry has
/// an empty key (a line holding only `:`). The operation's new block was
/// inserted before that line, which then belonged to the new block.
#[test]
fn an_entry_with_an_empty_key_stays_where_it_was() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/empty-key-after-a-block.yaml"),
    );
}

/// Found by the `fix` fuzz target: a flow sequence whose last item is a
/// pair without braces (`[database: drop`) followed by a comment line. Its
/// span runs on over the comment, and the `,` before the new key
/// parameter went after it, commented out: the fixed text did not load.
#[test]
fn an_item_added_after_a_flow_pair_and_a_comment_is_not_commented_out() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/flow-pair-before-a-comment.json"),
    );
}

/// Found by the `fix` fuzz target: a flow sequence whose last item is a
/// pair without braces and with a quoted key (`["x-idempotency": {…}]`).
/// Its end was taken as a quoted scalar's, after the key, and the new key
/// parameter went between the key and its colon.
#[test]
fn an_item_added_after_a_flow_pair_with_a_quoted_key_goes_after_its_value() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/flow-pair-with-a-quoted-key.json"),
    );
}

/// Found by the `fix` fuzz target: an operation whose `parameters` block
/// sequence sits at the key's own indentation gets both a contract and a
/// key parameter at the end of that sequence. Both insertions have one
/// indentation; the contract went first and the new item after it, where
/// it belonged to nothing.
#[test]
fn an_item_added_to_an_indentless_sequence_goes_before_a_new_entry() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/indentless-parameters-and-a-new-contract.yaml"),
    );
}

/// Found by the `fix` fuzz target: an operation written as a flow mapping
/// whose last entry has no value and is followed by a trailing comma
/// (`{…, {"201": …} , }`). The parser starts that empty value at the
/// comma; the new entries went after it with a comma of their own, and
/// the empty entry between the two did not load.
#[test]
fn entries_added_to_a_flow_mapping_with_a_trailing_comma_go_before_it() {
    // The key found was a mapping, now refused when the file loads; the
    // same shape with a string key still reaches the editor.
    support::refused_for_a_key_that_is_not_a_string(
        "openapi.json",
        include_str!("found/flow-operation-trailing-comma.json"),
    );
    support::fix_keeping_the_rest(
        "openapi.json",
        "{\"openapi\": \"3.1.0\", \"info\": {\"title\": \"t\", \"version\": \"1\"}, \"paths\": {\"/refunds\": {\"post\": {\"operationId\": \"createRefund\",\n         \"responses\": {\"201\": {\"description\": \"created\"}}, \"notes\"\n          , }}}}\n",
    );
}

/// Found by the `fix` fuzz target: a `parameters` block sequence at its
/// key's indentation whose item is a flow mapping (`- {…}`). The parser
/// starts such a sequence at its item's `{`, so it was taken for a flow
/// sequence and the new key parameter was written after the item as
/// `, {…}`, inside the next entry's value.
#[test]
fn an_item_added_to_an_indentless_sequence_of_flow_items_is_a_block_item() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/indentless-parameters-of-flow-items.yaml"),
    );
}

/// Found by the `fix` fuzz target: a document whose root is an anchored
/// flow mapping written without a blank (`&ao{…}`). The anchor was read
/// up to the end of its line, the root taken for a block mapping, and a
/// block written into the braces.
#[test]
fn an_anchored_flow_mapping_without_a_blank_is_a_flow_mapping() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/anchored-flow-root.yaml"),
    );
}

/// Found by the `fix` fuzz target: a `parameters` block sequence whose
/// items are empty (`- ` before a comment). The parser places an empty
/// item's span at whatever comes next; the new key parameter was written
/// at a column read off it, outside the list, and every pass added it
/// again. Such a list now gets no edit.
#[test]
fn a_list_of_empty_items_gets_no_item_added() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/parameters-of-empty-items.yaml"),
    );
}

/// Found by the `fix` fuzz target: a flow mapping holding `in:"header`,
/// one plain scalar (a `:` not followed by a blank is part of it). The
/// editor took the `"` for the start of a quoted scalar, so it found the
/// mapping's end on a later line and wrote the new parameter there.
#[test]
fn a_quote_inside_a_plain_flow_scalar_opens_no_string() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/flow-plain-scalar-with-a-quote.yaml"),
    );
}

/// Found by the `fix` fuzz target: an operation written as a flow
/// mapping holding one key without a value and a trailing comma
/// (`{ ateRefund", }`). The parser puts the empty value at its key, so the
/// new entries went before the closing brace, after the comma, and began
/// with a comma of their own: two commas in a row, and the fixed text did
/// not load. They now go before the trailing comma.
#[test]
fn a_flow_key_without_a_value_before_a_trailing_comma_gets_one_comma() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/flow-key-without-value-before-a-trailing-comma.json"),
    );
    for spec in [
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post: {operationId: , }\n",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post: {operationId: # why\n      , # note, with a comma\n      }\n",
    ] {
        support::fix_keeping_the_rest("openapi.yaml", spec);
    }
}

/// Found by the `fix` fuzz target: a document whose first entry is an
/// explicit key (`? one …`, a key with no value). New entries were
/// indented to that key's column, two past the `?`, where they belong to
/// no mapping, and the fixed text did not load. A block mapping's column
/// is now the `?`'s for such a key.
#[test]
fn entries_added_after_an_explicit_first_key_start_at_its_question_mark() {
    // The key found was a mapping, now refused when the file loads.
    support::refused_for_a_key_that_is_not_a_string(
        "openapi.yaml",
        include_str!("found/explicit-first-key.yaml"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        "? notes\nopenapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      ? operationId\n      : pay\n      responses: {'200': {description: ok}}\n",
    );
    // Later (run 26): the explicit key written on the line after its `?`
    // (`? # note`, then ` key`), one column in; the new block went to
    // that column, where it belonged to no mapping.
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/explicit-key-on-the-line-after-its-question-mark.yaml"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        "? # a note\n notes\nopenapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      responses: {'200': {description: ok}}\n",
    );
}

/// Found by the `fix` fuzz target: a spec that starts with a form feed
/// and then `{"…`. A form feed is whitespace to Rust's `trim_start` but
/// text to YAML, so the line is the first key of a block mapping; the
/// editor took the file for JSON and wrote the declared responses as JSON
/// entries (`,\n      "responses": {…}`) after the last line of a block
/// mapping, and the text did not load. A file is JSON only when `{` or
/// `[` follows JSON's own whitespace.
#[test]
fn a_form_feed_before_a_brace_starts_a_yaml_key_not_a_json_document() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/form-feed-before-a-brace.json"),
    );
    support::fix_keeping_the_rest(
        "openapi.json",
        "\u{c}{\"a\":\"b\": 1\nopenapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      x-idempotency: {key: {in: header, name: Idempotency-Key, format: '{uuid}'}, window: 24h}\n      responses:\n        '200': {description: ok}\n",
    );
}

/// Found by the `fix` fuzz target: a value that is a vertical tab alone,
/// on the line after its key (a plain scalar: to YAML a vertical tab is
/// text, not white space). Rust's `trim_end` took it for white space, so
/// the value seemed to end at its key, the new entries went between the
/// two, and the fixed text did not load. The editor trims only YAML's
/// white space (blanks and line breaks).
#[test]
fn a_vertical_tab_is_a_value_not_white_space() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/vertical-tab-value.yaml"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      responses:\n       \u{b}\n",
    );
}

/// Found by the `fix` fuzz target: a JSON-looking spec that is YAML (a
/// quote inside a plain scalar, `bpay"`) with a surrogate escape outside
/// any string. The loader rewrote surrogate escapes, telling strings apart
/// by counting quotes: the stray quote turned the count around, and the
/// padding the rewrite adds after a string went inside the key
/// `"/refunds"`, read as `"  /refunds"` until a fix moved the text. The
/// rewrite now runs only on text the YAML parser refuses as it is.
#[test]
fn a_surrogate_escape_after_a_stray_quote_moves_no_key() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/surrogate-escape-after-a-stray-quote.json"),
    );
}

/// Found by the `fix` fuzz target: a list item that is a pair whose key
/// is a flow mapping (`{name: …}: 8`). The item starts with `{`, so the
/// editor took it for a flow mapping and ended it at the key's closing
/// brace: the new parameter went between the key and its `: 8`, and the
/// fixed text did not load. A collection whose span starts at its first
/// key is not a flow one, however it starts. Such a key is now refused
/// when the file loads (keys in an OpenAPI document are strings), so the
/// input no longer reaches the editor.
#[test]
fn a_pair_with_a_flow_mapping_for_its_key_is_refused_before_any_fix() {
    support::refused_for_a_key_that_is_not_a_string(
        "openapi.json",
        include_str!("found/flow-mapping-as-a-key-in-a-list.json"),
    );
    support::refused_for_a_key_that_is_not_a_string(
        "openapi.yaml",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      parameters: [{name: X-Other, in: header}: 8]\n      responses:\n        '200': {description: ok}\n",
    );
}

/// Found by the `fix` fuzz target: an operation written as a flow mapping
/// after a tag (`"post": ! {`). The editor read the mapping's end off its
/// first character, the tag, took it for a mapping without braces, and
/// ended it at its last value: an empty flow mapping, whose closing brace
/// was then taken for the operation's, so the declared responses went
/// inside it. A flow collection's bracket is looked for past its anchor
/// or tag.
#[test]
fn a_tagged_flow_operation_ends_at_its_own_brace() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/tagged-flow-operation.json"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post: ! {operationId: pay, x-idempotency: {key: {in: header, name: Idempotency-Key, format: '{uuid}'}, window: 24h}, tags: {}}\n",
    );
}

/// Found by the `fix` fuzz target: a YAML document whose first key is a
/// flow mapping (`{…}: 3.1.0`). It starts with `{`, so the editor took the
/// file for JSON and wrote JSON entries (`,\n"x-idempotency": {…}`) after
/// block mappings' last lines, and the fixed text did not load. A file is
/// JSON to the editor only when that bracket opens its root. Such a key is
/// now refused when the file loads (keys in an OpenAPI document are
/// strings), so the input no longer reaches the editor.
#[test]
fn a_flow_mapping_as_the_first_key_is_refused_before_any_fix() {
    support::refused_for_a_key_that_is_not_a_string(
        "openapi.yaml",
        include_str!("found/flow-mapping-as-the-first-key.yaml"),
    );
    support::refused_for_a_key_that_is_not_a_string(
        "openapi.json",
        "{a: 1}: b\nopenapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      parameters:\n        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}\n      responses:\n        '200': {description: ok}\n",
    );
}

/// Found by the `fix` fuzz target: a key in a flow mapping with neither
/// `:` nor value (`client: {timeout: 5s, retries, …}`). Its null value has
/// no text, so "replacing" it wrote the new value straight after the key
/// (`retries[1s, 2s, 4s],`), which does not load. A value without text of
/// its own is not replaced.
#[test]
fn a_flow_key_without_a_colon_gets_no_value_glued_to_it() {
    support::fix_keeping_the_rest(
        "openapi.yaml",
        include_str!("found/flow-key-without-a-colon.yaml"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nx-idempotency:\n  client: {timeout: 5s, retries, max-attempts: 3}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      responses:\n        '200': {description: ok}\n",
    );
}

/// Found by the `fix` fuzz target (run 21), a panic: a JSON-looking
/// operation whose last entry is a tagged double-quoted string running
/// over many lines (`! "x-idempotd, … createRefu~nd"`). The brace read as
/// the operation's end came before that entry's key, and slicing the text
/// between them panicked. A mapping whose end comes before its last key
/// gets no entry added.
#[test]
fn a_mapping_end_read_before_its_last_key_is_no_place_to_add() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/tagged-string-over-a-flow-mapping-end.json"),
    );
}

/// Found by the `fix` fuzz target (run 27): the same tagged string, with a
/// brace inside it and a trailing comma after it. The editor read the
/// mapping's end inside the string (a quote after a tag did not open one
/// to it) and the string's end at its span's, past the comma, and the new
/// entries went inside the string. A tag or an anchor now keeps a quote
/// after it a string's start, and a tagged quoted value ends at its quote.
#[test]
fn a_tagged_string_with_a_brace_inside_keeps_new_entries_outside_it() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/tagged-string-spanning-lines-before-a-trailing-comma.json"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post: {operationId: pay, summary: ! \"a {b}\n      c}\", }\n",
    );
}

/// Found by the `fix` fuzz target: a `parameters` flow list whose last
/// item is a plain scalar ending in a dash after a blank (`$     -`). The
/// parser reads `-,` as a new scalar's start, which no scalar may have,
/// so the comma the new key parameter is written after must not touch it.
#[test]
fn an_item_added_after_a_plain_scalar_ending_in_a_dash_is_kept_apart() {
    support::fix_keeping_the_rest(
        "openapi.json",
        include_str!("found/plain-scalar-ending-in-a-dash-before-a-new-item.json"),
    );
    support::fix_keeping_the_rest(
        "openapi.yaml",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      parameters: [$ - ]\n      responses:\n        '200': {description: ok}\n",
    );
}

/// Found while reading a fuzz case: a document-level `x-idempotency`
/// without `client`, and an operation that gets a contract. The two
/// guessed client fields were each added with a `client:` of their own, so
/// the fixed text held the key twice (which parsers read differently); the
/// target did not see it until it checked for keys written twice.
#[test]
fn a_new_document_section_is_written_once_with_all_its_fields() {
    let fixed = support::fix_keeping_the_rest(
        "openapi.yaml",
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nx-idempotency:\n  server: {max-processing: 3s}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      responses:\n        '201': {description: ok}\n",
    );
    assert_eq!(fixed.matches("client:").count(), 1, "{fixed}");
    let fixed = support::fix_keeping_the_rest(
        "openapi.json",
        "{\"openapi\": \"3.1.0\", \"info\": {\"title\": \"t\", \"version\": \"1\"},\n \"x-idempotency\": {\"server\": {\"max-processing\": \"3s\"}},\n \"paths\": {\"/pay\": {\"post\": {\"operationId\": \"pay\", \"responses\": {\"201\": {\"description\": \"ok\"}}}}}}\n",
    );
    assert_eq!(fixed.matches("\"client\"").count(), 1, "{fixed}");
}
