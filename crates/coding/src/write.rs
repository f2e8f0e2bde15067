//! stub
pub struct WriteTool;
impl WriteTool {
    pub fn new(_w: std::sync::Arc<crate::Workspace>) -> Self {
        WriteTool
    }
}
