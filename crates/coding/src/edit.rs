//! stub
pub struct EditTool;
impl EditTool {
    pub fn new(_w: std::sync::Arc<crate::Workspace>) -> Self {
        EditTool
    }
}
