//! "Did you mean …?" for misspelt names.

/// The candidate closest to `word`, when it is close enough to be a typo:
/// fewest edits first (earlier candidates win ties), else a name that
/// shares most of its start.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    // Edits are at least the length difference: a word much longer than
    // every candidate is no typo of one, and comparing it would cost
    // length × candidates (a 50 MB value must not take minutes).
    let longest = candidates.iter().map(|c| c.len()).max().unwrap_or(0);
    if word.len() > 2 * longest + 2 {
        return None;
    }
    let allowed_edits = (word.chars().count() / 3).max(1);
    let by_edits = candidates
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(word, candidate), *candidate))
        .filter(|(edits, _)| *edits <= allowed_edits)
        .min_by_key(|(edits, _)| *edits)
        .map(|(_, candidate)| candidate);
    by_edits.or_else(|| {
        candidates
            .iter()
            .map(|candidate| (strsim::jaro_winkler(word, candidate), *candidate))
            .filter(|(score, _)| *score >= 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, candidate)| candidate)
    })
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_typos() {
        assert_eq!(closest("windw", ["window", "key"]), Some("window"));
        assert_eq!(closest("uid", ["uuid", "ulid"]), Some("uuid"));
        assert_eq!(
            closest("max-lenght", ["max-length", "name"]),
            Some("max-length")
        );
        assert_eq!(closest("zebra", ["window", "key"]), None);
    }
}
