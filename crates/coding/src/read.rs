//! stub
pub struct ReadTool;
impl ReadTool {
    pub fn new(_w: std::sync::Arc<crate::Workspace>) -> Self {
        ReadTool
    }
}
