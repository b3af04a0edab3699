//! Recursive schemas: a type that contains itself by value is infinitely
//! large, and a type alias cannot name itself. Both are found as strongly
//! connected components of the "refers to" graph and broken: with a `Box`
//! on every by-value edge inside a cycle, and a newtype for aliases that
//! refer to each other.

use std::collections::{BTreeMap, HashMap};

use super::model::{Kind, Ty, TypeDef};

pub fn break_cycles(mut defs: BTreeMap<String, TypeDef>) -> BTreeMap<String, TypeDef> {
    alias_cycles_to_newtypes(&mut defs);
    box_by_value_cycles(&mut defs);
    defs
}

fn alias_cycles_to_newtypes(defs: &mut BTreeMap<String, TypeDef>) {
    let names: Vec<&String> = defs.keys().collect();
    let index: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(at, name)| (name.as_str(), at))
        .collect();
    let edges: Vec<Vec<usize>> = defs
        .values()
        .map(|def| match &def.kind {
            Kind::Alias(ty) => {
                let mut mentioned = Vec::new();
                mentions(ty, &mut mentioned);
                mentioned
                    .into_iter()
                    .filter_map(|name| index.get(name.as_str()).copied())
                    .filter(|&at| matches!(defs[names[at]].kind, Kind::Alias(_)))
                    .collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let cyclic: Vec<String> = in_cycles(&edges)
        .into_iter()
        .map(|at| names[at].clone())
        .collect();
    for name in cyclic {
        if let Some(def) = defs.get_mut(&name) {
            if let Kind::Alias(ty) = &def.kind {
                def.kind = Kind::Newtype(ty.clone());
            }
        }
    }
}

fn box_by_value_cycles(defs: &mut BTreeMap<String, TypeDef>) {
    let names: Vec<String> = defs.keys().cloned().collect();
    let index: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(at, name)| (name.as_str(), at))
        .collect();
    let edges: Vec<Vec<usize>> = defs
        .values()
        .map(|def| {
            by_value_uses(&def.kind)
                .filter_map(|ty| ty.by_value())
                .filter_map(|name| index.get(name).copied())
                .collect()
        })
        .collect();
    let component = components(&edges);
    let cyclic = in_cycles(&edges);
    for (at, name) in names.iter().enumerate() {
        if !cyclic.contains(&at) {
            continue;
        }
        let same_cycle = |ty: &Ty| {
            ty.by_value()
                .and_then(|target| index.get(target))
                .is_some_and(|&target| component[target] == component[at])
        };
        let Some(def) = defs.get_mut(name) else {
            continue;
        };
        match &mut def.kind {
            Kind::Struct(shape) => {
                for field in &mut shape.fields {
                    if same_cycle(&field.ty) {
                        field.ty = field.ty.clone().boxed();
                    }
                }
            }
            Kind::Untagged(alternatives) => {
                for alternative in alternatives {
                    if same_cycle(&alternative.ty) {
                        alternative.ty = alternative.ty.clone().boxed();
                    }
                }
            }
            Kind::Tagged(tagged) => {
                for variant in &mut tagged.variants {
                    match &mut variant.fields {
                        Some(fields) => {
                            for field in fields {
                                if same_cycle(&field.ty) {
                                    field.ty = field.ty.clone().boxed();
                                }
                            }
                        }
                        None => {
                            if same_cycle(&variant.ty) {
                                variant.ty = variant.ty.clone().boxed();
                            }
                        }
                    }
                }
            }
            Kind::Newtype(ty) => {
                if same_cycle(ty) {
                    *ty = ty.clone().boxed();
                }
            }
            Kind::Alias(_) | Kind::StringEnum(_) | Kind::Response(_) | Kind::Media(_) => {}
        }
    }
}

/// The types a definition holds directly (a `Vec` or map of them is a
/// pointer, so [`Ty::by_value`] looks only through `Option`).
fn by_value_uses(kind: &Kind) -> Box<dyn Iterator<Item = &Ty> + '_> {
    match kind {
        Kind::Struct(shape) => Box::new(shape.fields.iter().map(|field| &field.ty)),
        Kind::Untagged(alternatives) => Box::new(alternatives.iter().map(|a| &a.ty)),
        Kind::Tagged(tagged) => {
            Box::new(
                tagged
                    .variants
                    .iter()
                    .flat_map(|variant| match &variant.fields {
                        Some(fields) => fields.iter().map(|field| &field.ty).collect::<Vec<_>>(),
                        None => vec![&variant.ty],
                    }),
            )
        }
        Kind::Alias(ty) | Kind::Newtype(ty) => Box::new(std::iter::once(ty)),
        // A response's bodies are held only by its response enum, which
        // nothing holds.
        Kind::StringEnum(_) | Kind::Response(_) | Kind::Media(_) => Box::new(std::iter::empty()),
    }
}

fn mentions(ty: &Ty, out: &mut Vec<String>) {
    match ty {
        Ty::Named(name) => out.push(name.clone()),
        Ty::Vec(inner) | Ty::Map(inner) | Ty::Option(inner) | Ty::Boxed(inner) => {
            mentions(inner, out)
        }
        _ => {}
    }
}

/// The nodes that lie on a cycle (a component of several, or a self-loop).
fn in_cycles(edges: &[Vec<usize>]) -> std::collections::HashSet<usize> {
    let component = components(edges);
    let mut size: HashMap<usize, usize> = HashMap::new();
    for &c in &component {
        *size.entry(c).or_default() += 1;
    }
    (0..edges.len())
        .filter(|&node| size[&component[node]] > 1 || edges[node].contains(&node))
        .collect()
}

/// Strongly connected components (Tarjan's algorithm, iterative so that
/// a long chain of schemas cannot overflow the stack): the component
/// number of each node.
fn components(edges: &[Vec<usize>]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let count = edges.len();
    let mut order = vec![UNSEEN; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut component = vec![UNSEEN; count];
    let mut stack = Vec::new();
    let mut next_order = 0;
    let mut next_component = 0;
    for root in 0..count {
        if order[root] != UNSEEN {
            continue;
        }
        // (node, index of the next edge to follow)
        let mut work = vec![(root, 0usize)];
        order[root] = next_order;
        low[root] = next_order;
        next_order += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut edge)) = work.last_mut() {
            if let Some(&next) = edges[node].get(*edge) {
                *edge += 1;
                if order[next] == UNSEEN {
                    order[next] = next_order;
                    low[next] = next_order;
                    next_order += 1;
                    stack.push(next);
                    on_stack[next] = true;
                    work.push((next, 0));
                } else if on_stack[next] {
                    low[node] = low[node].min(order[next]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == order[node] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component[member] = next_component;
                    if member == node {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_of_a_graph() {
        // 0 → 1 → 2 → 0, 3 → 3, 4 → 0
        let edges = vec![vec![1], vec![2], vec![0], vec![3], vec![0]];
        let component = components(&edges);
        assert_eq!(component[0], component[1]);
        assert_eq!(component[1], component[2]);
        assert_ne!(component[3], component[0]);
        assert_ne!(component[4], component[0]);
        let cyclic = in_cycles(&edges);
        assert!(cyclic.contains(&0) && cyclic.contains(&3) && !cyclic.contains(&4));
    }

    #[test]
    fn a_long_chain_does_not_overflow() {
        let edges: Vec<Vec<usize>> = (0..200_000).map(|n| vec![(n + 1) % 200_000]).collect();
        assert_eq!(in_cycles(&edges).len(), 200_000);
    }
}
