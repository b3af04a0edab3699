//! `multipart/form-data` bodies, end to end: a generated service
//! (`tests/codegen_fixtures/multipart.yaml`, shaped like Stripe's
//! `POST /v1/files`: a file, an enum, a JSON object, repeated text and
//! file parts) and its generated client are built in the shared
//! `target/generated` directory; the test in
//! `tests/codegen_fixtures/multipart/sent.rs` sends real bodies, and the
//! client's, to the service, whose business code echoes what it received.
//! Runs when `IDEMGEN_TEST_GENERATED_BUILDS=1`.

use std::path::Path;

use crate::support::build::{self, root};
use crate::support::run::idemgen;
use crate::support::skip;

const SPEC: &str = "tests/codegen_fixtures/multipart.yaml";

/// What `gen` writes for the spec, without building it: the body is a
/// typed model whose binary properties are files, read part by part with
/// `multipart_as`; the client sends it with `retry::multipart`.
#[test]
fn the_generator_types_the_parts() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    let run = idemgen(&[
        "gen",
        SPEC,
        "-o",
        server.to_str().unwrap(),
        "--db",
        "sqlite",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let models = std::fs::read_to_string(server.join("src/models.rs")).unwrap();
    for expected in [
        "pub struct FilePart {",
        "pub file_name: Option<String>,",
        "pub bytes: Vec<u8>,",
        "pub file: FilePart,",
        "pub pages: Option<Vec<FilePart>>,",
        "pub file_link_data: Option<UploadFileRequestFileLinkData>,",
    ] {
        assert!(models.contains(expected), "{expected} in {models}");
    }
    assert!(!models.contains("= Vec<u8>;"), "no raw body: {models}");
    // `gen` formats its output: compare without the layout (nor the
    // trailing comma a broken line gets).
    let flat: String = std::fs::read_to_string(server.join("src/routes.rs"))
        .unwrap()
        .split_whitespace()
        .collect::<String>()
        .replace(",]", "]")
        .replace(",)", ")");
    assert!(
        flat.contains(
            r#"letbody:models::UploadFileRequest=request.multipart_checked_as(&[Part::file("file"),Part::text("purpose",Scalar::String),Part::text("copies",Scalar::Integer),Part::text("public",Scalar::Boolean),Part::json("file_link_data"),Part::json("link_options").brackets(&Shape::Members(&[("notify",Shape::Scalar(Scalar::Boolean)),("expires_in",Shape::Scalar(Scalar::Integer)),("metadata",Shape::Members(&[]))])),Part::text("labels",Scalar::String).joined('|'),Part::text("expand",Scalar::String).many(),Part::file("pages").many()],400,UPLOAD_FILE_BODY)?;"#
        ),
        "{flat}"
    );
    // The keywords, checked on the parts as read (no 422 declared: 400).
    for expected in [
        r#"Constraint{at:"/copies",check:Check::Minimum("1"),}"#,
        r#"Constraint{at:"/file_link_data/expires_at",check:Check::ExclusiveMinimum("0"),}"#,
        r#"Constraint{at:"/expand",check:Check::MaxItems(3),}"#,
        r#"Constraint{at:"/link_options/expires_in",check:Check::Minimum("60"),}"#,
    ] {
        assert!(flat.contains(expected), "{expected} in {flat}");
    }
    // The list joined in one part is named for the fingerprint, which
    // splits it as it is read.
    let operations: String = std::fs::read_to_string(server.join("src/operations.rs"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(
        operations.contains(
            r#".joined_form_lists(&[idemgen_runtime::JoinedList{name:"labels",delimiter:'|',},],);"#
        ),
        "{operations}"
    );
    let client = dir.path().join("client");
    let run = idemgen(&["gen", SPEC, "-o", client.to_str().unwrap(), "--client"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lib = std::fs::read_to_string(client.join("src/lib.rs"))
        .unwrap()
        .split_whitespace()
        .collect::<String>()
        .replace(",]", "]")
        .replace(",)", ")");
    assert!(
        lib.contains(r#"retry::multipart(body,&[retry::Part::file("file"),retry::Part::json("file_link_data"),retry::Part::brackets("link_options"),retry::Part::joined("labels",'|'),retry::Part::file("pages")])?"#),
        "{lib}"
    );
}

/// A multipart body whose schema a JSON body shares (`$ref`) gets a
/// struct of its own: its `format: binary` property is a `FilePart`, while
/// the JSON body's stays the string JSON sends.
#[test]
fn a_schema_shared_with_a_json_body_is_a_file_only_in_the_multipart_body() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("shared.yaml");
    std::fs::write(
        &spec,
        r##"openapi: 3.1.0
info: {title: Shared upload schema, version: "1"}
paths:
  /files:
    post:
      operationId: uploadFile
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema: {$ref: "#/components/schemas/Upload"}
      responses:
        "200": {description: Stored.}
  /files/json:
    post:
      operationId: uploadJson
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Upload"}
      responses:
        "200": {description: Stored.}
components:
  schemas:
    Upload:
      type: object
      required: [file]
      properties:
        file: {type: string, format: binary}
        note: {type: string}
"##,
    )
    .unwrap();
    let server = dir.path().join("server");
    let run = idemgen(&[
        "gen",
        spec.to_str().unwrap(),
        "-o",
        server.to_str().unwrap(),
        "--db",
        "sqlite",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let flat: String = std::fs::read_to_string(server.join("src/models.rs"))
        .unwrap()
        .split_whitespace()
        .collect();
    for expected in [
        "pubstructUpload{///Format:`binary`.pubfile:String,",
        "pubstructUploadFileRequest{///Format:`binary`.pubfile:FilePart,",
    ] {
        assert!(flat.contains(expected), "{expected} in {flat}");
    }
    let routes: String = std::fs::read_to_string(server.join("src/routes.rs"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(
        routes.contains("letbody:models::UploadFileRequest=request.multipart_checked_as("),
        "{routes}"
    );
    assert!(
        routes.contains("request.body_as_or::<models::Upload>(400)"),
        "{routes}"
    );
}

#[test]
fn parts_arrive_typed_are_refused_by_name_and_replay_across_boundaries() {
    if skip::generated_builds_skipped() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("multipart");
    let client = dir.path().join("multipart-client");
    let run = idemgen(&["gen", SPEC, "-o", out.to_str().unwrap(), "--db", "sqlite"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = idemgen(&["gen", SPEC, "-o", client.to_str().unwrap(), "--client"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for project in [&out, &client] {
        std::fs::copy(root().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    }
    // Both as generated: formatted as rustfmt would, clippy-clean, each in
    // a workspace of its own (the client over plain HTTP, without rustls).
    cargo_ok(&out, &["fmt", "--check"]);
    cargo_ok(&out, &["clippy", "--all-targets", "--", "-D", "warnings"]);
    cargo_ok(&client, &["fmt", "--check"]);
    cargo_ok(
        &client,
        &[
            "clippy",
            "--all-targets",
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ],
    );
    let fixture = root().join("tests/codegen_fixtures/multipart");
    std::fs::copy(
        fixture.join("upload_file.rs"),
        out.join("src/business/upload_file.rs"),
    )
    .unwrap();
    std::fs::copy(fixture.join("sent.rs"), out.join("tests/sent.rs")).unwrap();
    let mut manifest = std::fs::read_to_string(out.join("Cargo.toml")).unwrap();
    manifest.push_str(
        "\n[target.'cfg(all())'.dev-dependencies]\n\
         multipart-client = { path = \"../multipart-client\", default-features = false }\n\
         reqwest = { version = \"0.13\", default-features = false }\n",
    );
    std::fs::write(out.join("Cargo.toml"), manifest).unwrap();
    cargo_ok(&out, &["test", "--test", "sent"]);
}

fn cargo_ok(project: &Path, args: &[&str]) {
    let output = build::cargo(project).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "cargo {args:?} in {}:\n{}\n{}",
        project.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
