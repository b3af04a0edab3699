//! Go to definition on a `$ref`: the node it names, in this file or in a
//! file it references, resolved by the loader as `idemgen lint` resolves it.

use lsp_types::{GotoDefinitionResponse, Location};

use super::documents::{LineIndex, path_to_uri};
use super::locate::Located;
use idemgen_spec::{FileId, Workspace};

pub fn definition(workspace: &Workspace, located: &Located<'_>) -> Option<GotoDefinitionResponse> {
    if located.path.last().map(String::as_str) != Some("$ref") {
        return None;
    }
    let reference = located.node.as_str()?;
    let target = workspace.ref_target(FileId(0), reference)?;
    let source = workspace.file(target.span.file);
    let text = &source.text;
    let start = source.byte_offset(target.span.start as usize);
    let range = LineIndex::new(text).range(text, start, start);
    Some(GotoDefinitionResponse::Scalar(Location::new(
        path_to_uri(&source.path)?,
        range,
    )))
}
